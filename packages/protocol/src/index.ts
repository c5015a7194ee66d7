export {
  ID_PATTERN,
  TOOL_CALL_ID_PATTERN,
  IdKind,
  isValidId,
  isValidToolCallId,
  assertId,
} from './ids.ts';
export {
  ResultStatus,
  ERROR_CODES,
  ErrorCode,
  isErrorCode,
  isRetryable,
  statusForCode,
  MeshError,
  ProtocolError,
  ToolError,
  RetryableError,
  errorCodeOf,
  messageWithCause,
} from './errors.ts';
export type { ErrorOptions } from './errors.ts';
export {
  PROTOCOL_VERSION,
  DEFAULT_ROOT,
  SYSTEM_CHANNEL,
  Kind,
  AgentEvent,
  createSubjects,
  assertRoot,
  splitToolName,
  joinToolName,
} from './subjects.ts';
export type { Scope, ParsedSubject, Subjects } from './subjects.ts';
export { createNames, MsgId } from './names.ts';
export { msgIdKeyOf, randomMsgIdKey, sealMsgId, toolCallIdOfMsgId } from './msg-id.ts';
export type { MsgIdKey } from './msg-id.ts';
export type { Names } from './names.ts';
export { Header } from './headers.ts';
export { toolCallEnvelope, decidedCallEnvelope } from './envelope.ts';
export type { Envelope, CallTurn, ToolCallEnvelopeInput, ParkedCall } from './envelope.ts';
export {
  AfterExecution,
  CALL_CONTEXT_MAX_BYTES,
  CallContext,
  ToolCall,
  McpCallEnvelope,
  ErrorBody,
  ToolResultContent,
  ToolResultEvent,
  WakeupReason,
  Wakeup,
  CancelRequest,
  TaskCancelRequest,
  ToolProgressEvent,
  TaskStatus,
  AgentTaskEvent,
  AgentStepEvent,
  AgentState,
  AgentStateEvent,
  AgentChunk,
  McpRefreshRequest,
  McpRefreshReply,
  McpPassthroughMethod,
  McpRpcRequest,
  McpRpcReply,
  McpAskMethod,
  MCP_ASK_NO_CLIENT,
  McpAskRequest,
  McpInputAnswered,
  McpNoticeMethod,
  McpNotice,
  RegistryChange,
  RegistryChangedEvent,
  KeyRevokedEvent,
  Catalog,
} from './messages.ts';
export type { ToolCallInput, MessageType, Message, MessageHandlers } from './messages.ts';
export { encodeMessage, decodeMessage, validateMessage, parseJson } from './codec.ts';
export { jsonDepth, assertJsonDepth } from './json-depth.ts';
export {
  RateLimitOptions,
  RetryOptions,
  CostOptions,
  ToolOptions,
  ApprovalMode,
  ApprovalOptions,
  MAX_APPROVAL_TIMEOUT_MS,
  HttpMethod,
  HttpAuthType,
  HttpAuth,
  SecretAuth,
  OAuth2Auth,
  OAuth2Grant,
  OAuth2ClientAuth,
  HttpSpec,
  urlPlaceholders,
  asDraft2020,
} from './tool-options.ts';
