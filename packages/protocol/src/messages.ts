// The message catalog: one zod schema per message type, each with a version literal. Unknown
// fields are rejected, so a typo in a publisher's body is an error, not a silently ignored key.
import { z } from 'zod';
import { ID_PATTERN, TOOL_CALL_ID_PATTERN } from './ids.ts';
import { ERROR_CODES, ResultStatus } from './errors.ts';

const id = z.string().regex(ID_PATTERN, 'must be 1-64 characters of [A-Za-z0-9_-]');
const toolCallId = z
  .string()
  .regex(TOOL_CALL_ID_PATTERN, 'must be 1-128 characters of [A-Za-z0-9_-]');
const toolName = z
  .string()
  .regex(/^[A-Za-z0-9_-]{1,64}\.[A-Za-z0-9_-]{1,64}$/, 'must be <target>.<tool>');
const version = z.literal(1);

export const AfterExecution = { suspend: 'suspend', terminate: 'terminate' } as const;
export type AfterExecution = (typeof AfterExecution)[keyof typeof AfterExecution];

const utf8 = new TextEncoder();
/** Largest call context, as JSON: it is a label to find calls by, not a payload. */
export const CALL_CONTEXT_MAX_BYTES = 4_096;
/** A session id: 1-128 characters, no control characters. */
// eslint-disable-next-line no-control-regex
const SESSION_ID = /^[^\u0000-\u001f\u007f]{1,128}$/;

/**
 * Where a call comes from, in the caller's own terms: a session to group its calls by, and a
 * small metadata object. Kept on the execution row; history filters by `session_id`.
 */
export const CallContext = z
  .strictObject({
    session_id: z
      .string()
      .regex(SESSION_ID, 'must be 1-128 characters, no control characters')
      .optional(),
    metadata: z.record(z.string(), z.unknown()).optional(),
  })
  .refine((c) => utf8.encode(JSON.stringify(c)).length <= CALL_CONTEXT_MAX_BYTES, {
    message: `must be at most ${CALL_CONTEXT_MAX_BYTES} bytes as JSON`,
  })
  // Postgres' jsonb cannot hold a NUL character: refused here rather than lost at the write.
  .refine((c) => !JSON.stringify(c).includes('\\u0000'), {
    message: 'must not contain NUL characters',
  });
export type CallContext = z.infer<typeof CallContext>;

/**
 * What a 2026-07-28 MCP client sent with its request, passed on to the MCP server on that
 * revision: its capabilities, and on a re-sent request its answers to the server's input
 * requests with the server's own requestState (SEP-2322). The mesh's signed wrapper of that
 * state never travels here: the api checks it and unwraps it first.
 */
export const McpCallEnvelope = z.strictObject({
  client_capabilities: z.record(z.string(), z.unknown()),
  input_responses: z.record(z.string(), z.unknown()).optional(),
  request_state: z.string().max(65_536).optional(),
  /**
   * The client's Mcp-Param-* headers (SEP-2243), names lower-cased, passed on as sent so the
   * server checks them against the arguments.
   */
  param_headers: z
    .record(z.string().regex(/^mcp-param-[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/), z.string().max(8_192))
    .refine((h) => Object.keys(h).length <= 32, { message: 'at most 32 Mcp-Param headers' })
    .optional(),
});
export type McpCallEnvelope = z.infer<typeof McpCallEnvelope>;

export const ToolCall = z.strictObject({
  v: version,
  tool_call_id: toolCallId,
  tool_name: toolName,
  arguments: z.record(z.string(), z.unknown()),
  after_execution: z.enum(AfterExecution).default('suspend'),
  timeout_ms: z.number().int().positive().optional(),
  // A call of a non-idempotent tool whose instance died mid-run is filed `interrupted` unless
  // its caller allows it to run again (protocol section 10.5).
  rerun_on_takeover: z.boolean().optional(),
  context: CallContext.optional(),
  mcp: McpCallEnvelope.optional(),
});
export type ToolCall = z.infer<typeof ToolCall>;
export type ToolCallInput = z.input<typeof ToolCall>;

export const ErrorBody = z.strictObject({
  code: z.enum(
    Object.keys(ERROR_CODES) as [keyof typeof ERROR_CODES, ...(keyof typeof ERROR_CODES)[]],
  ),
  message: z.string(),
  details: z.record(z.string(), z.unknown()).optional(),
});
export type ErrorBody = z.infer<typeof ErrorBody>;

/** The content of a tool_result card: what the tool returned, or why it did not. */
export const ToolResultContent = z.strictObject({
  status: z.enum(ResultStatus),
  result: z.unknown().optional(),
  error: ErrorBody.optional(),
  duration_ms: z.number().nonnegative(),
});
export type ToolResultContent = z.infer<typeof ToolResultContent>;

/** Published on `evt.tool.<target>.result` once per call (re-emitted, same card, on redelivery). */
export const ToolResultEvent = z.strictObject({
  v: version,
  tool_call_id: toolCallId,
  tool_name: z.string(),
  status: z.enum(ResultStatus),
  card_id: z.uuid(),
  created_at: z.iso.datetime({ offset: true }),
  content: ToolResultContent,
});
export type ToolResultEvent = z.infer<typeof ToolResultEvent>;

export const WakeupReason = { toolResult: 'tool_result', task: 'task' } as const;
export type WakeupReason = (typeof WakeupReason)[keyof typeof WakeupReason];

/** Published on `cmd.agent.<agent>.wakeup`: something waits in the agent's inbox. */
export const Wakeup = z.strictObject({
  v: version,
  agent_id: id,
  reason: z.enum(WakeupReason),
  correlation_id: toolCallId,
  turn_id: z.string().max(128).optional(),
  turn_epoch: z.number().int().nonnegative().optional(),
});
export type Wakeup = z.infer<typeof Wakeup>;

/** Published on `cmd.sys.cancel`: every tool-service instance listens and aborts the call. */
export const CancelRequest = z.strictObject({
  v: version,
  tool_call_id: toolCallId,
  reason: z.string().max(500).optional(),
});
export type CancelRequest = z.infer<typeof CancelRequest>;

/** Sent on `ctl.task.<target>.cancel` (core NATS request): the owning instance kills the task. */
export const TaskCancelRequest = z.strictObject({
  v: version,
  task_id: z.uuid(),
  reason: z.string().max(500).optional(),
});
export type TaskCancelRequest = z.infer<typeof TaskCancelRequest>;

/**
 * `evt.tool.<target>.progress`: a running call is alive (a watch's heartbeat). Never a result:
 * the call's one result is still written once, at the end.
 */
export const ToolProgressEvent = z.strictObject({
  v: version,
  tool_call_id: toolCallId,
  tool_name: toolName,
  at: z.iso.datetime({ offset: true }),
  detail: z.record(z.string(), z.unknown()).optional(),
});
export type ToolProgressEvent = z.infer<typeof ToolProgressEvent>;

export const TaskStatus = {
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
} as const;
export type TaskStatus = (typeof TaskStatus)[keyof typeof TaskStatus];

/** `evt.agent.<agent>.task`: a task started or finished. */
export const AgentTaskEvent = z.strictObject({
  v: version,
  agent_id: id,
  task_id: z.string().min(1).max(128),
  status: z.enum(TaskStatus),
  card_id: z.uuid().optional(),
  error: ErrorBody.optional(),
});
export type AgentTaskEvent = z.infer<typeof AgentTaskEvent>;

/** `evt.agent.<agent>.step`: one LLM step of a turn finished. */
export const AgentStepEvent = z.strictObject({
  v: version,
  agent_id: id,
  turn_id: z.string().min(1).max(128),
  turn_epoch: z.number().int().nonnegative(),
  step: z.number().int().nonnegative(),
  tool_call_ids: z.array(toolCallId),
});
export type AgentStepEvent = z.infer<typeof AgentStepEvent>;

export const AgentState = { idle: 'idle', thinking: 'thinking', waiting: 'waiting' } as const;
export type AgentState = (typeof AgentState)[keyof typeof AgentState];

/** `evt.agent.<agent>.state`: the agent changed state. */
export const AgentStateEvent = z.strictObject({
  v: version,
  agent_id: id,
  state: z.enum(AgentState),
  turn_id: z.string().max(128).optional(),
});
export type AgentStateEvent = z.infer<typeof AgentStateEvent>;

/** `str.agent.<agent>.chunk`: streamed LLM output over core NATS; lossy by design. */
export const AgentChunk = z.strictObject({
  v: version,
  agent_id: id,
  turn_id: z.string().max(128),
  seq: z.number().int().nonnegative(),
  delta: z.string(),
});
export type AgentChunk = z.infer<typeof AgentChunk>;

/** Sent on `ctl.mcp.<server>.refresh` (core NATS request): list the server's tools again. */
export const McpRefreshRequest = z.strictObject({ v: version });
export type McpRefreshRequest = z.infer<typeof McpRefreshRequest>;

/** The reply to an MCP refresh: what the discovery did, by full tool name, or why it failed. */
export const McpRefreshReply = z.strictObject({
  v: version,
  ok: z.boolean(),
  state: z.enum(['connected', 'error']),
  tool_count: z.int().min(0),
  added: z.array(z.string()),
  updated: z.array(z.string()),
  disabled: z.array(z.string()),
  /** Tools that could not be registered, with the reason (name not an id, name taken). */
  refused: z.array(z.strictObject({ tool: z.string(), reason: z.string() })),
  /** Tools whose definition changed: held (definition_changed) until approved. */
  held: z.array(z.string()).optional(),
  error: z.strictObject({ code: z.string(), message: z.string() }).optional(),
});
export type McpRefreshReply = z.infer<typeof McpRefreshReply>;

/**
 * The MCP methods the api passes through to a project's MCP server (its own endpoint, and the
 * project's facade for prefixed prompts and resources) on `ctl.mcp.<server>.rpc`.
 */
export const McpPassthroughMethod = {
  'resources/list': 'resources/list',
  'resources/read': 'resources/read',
  'resources/templates/list': 'resources/templates/list',
  'resources/subscribe': 'resources/subscribe',
  'resources/unsubscribe': 'resources/unsubscribe',
  'prompts/list': 'prompts/list',
  'prompts/get': 'prompts/get',
  'completion/complete': 'completion/complete',
  'logging/setLevel': 'logging/setLevel',
} as const;
export type McpPassthroughMethod = (typeof McpPassthroughMethod)[keyof typeof McpPassthroughMethod];

/** Sent on `ctl.mcp.<server>.rpc` (core NATS request): one request to the server, as is. */
export const McpRpcRequest = z.strictObject({
  v: version,
  method: z.enum(McpPassthroughMethod),
  params: z.record(z.string(), z.unknown()),
  mcp: McpCallEnvelope.optional(),
});
export type McpRpcRequest = z.infer<typeof McpRpcRequest>;

/** The server's answer: its result as sent, or its JSON-RPC error (or the mesh's, code -32603). */
export const McpRpcReply = z.strictObject({
  v: version,
  result: z.record(z.string(), z.unknown()).optional(),
  error: z
    .strictObject({ code: z.int(), message: z.string(), data: z.unknown().optional() })
    .optional(),
});
export type McpRpcReply = z.infer<typeof McpRpcReply>;

/**
 * The notifications of an MCP server the mesh passes on to the clients of the project's facade
 * and of the server's own endpoint. `notifications/tools/list_changed` is not among them: it
 * refreshes the registry, whose change reaches every session (registry_changed).
 */
export const McpNoticeMethod = {
  'notifications/resources/updated': 'notifications/resources/updated',
  'notifications/resources/list_changed': 'notifications/resources/list_changed',
  'notifications/prompts/list_changed': 'notifications/prompts/list_changed',
  'notifications/message': 'notifications/message',
} as const;
export type McpNoticeMethod = (typeof McpNoticeMethod)[keyof typeof McpNoticeMethod];

/** Published on `ctl.mcp.<server>.notify` (core NATS): one notification of the server, as sent. */
export const McpNotice = z.strictObject({
  v: version,
  method: z.enum(McpNoticeMethod),
  params: z.record(z.string(), z.unknown()),
});
export type McpNotice = z.infer<typeof McpNotice>;

/** What an MCP server may ask the client during a tool call. */
export const McpAskMethod = {
  'sampling/createMessage': 'sampling/createMessage',
  'elicitation/create': 'elicitation/create',
} as const;
export type McpAskMethod = (typeof McpAskMethod)[keyof typeof McpAskMethod];

/**
 * Sent on `ctl.ask.<tool_call_id>.request` (core NATS request) by the tools service: the MCP
 * server running the call asks its client something. The api instance waiting for the call
 * asks the MCP client that made it, and answers with `mcp_rpc_reply`.
 */
export const McpAskRequest = z.strictObject({
  v: version,
  method: z.enum(McpAskMethod),
  params: z.record(z.string(), z.unknown()),
});
export type McpAskRequest = z.infer<typeof McpAskRequest>;

/**
 * `error.data.reason` of an `mcp_rpc_reply` to an `mcp_ask` when the api instance waiting for
 * the call has no client that can answer it (one without the capability): the tools service
 * then answers as if nobody were waiting (an input request, or sampling refused or answered).
 */
export const MCP_ASK_NO_CLIENT = 'no_client';

/**
 * Sent on `ctl.input.<input_request_id>.answered` (core NATS) by the api that stored an answer
 * to an input request: the tools service waiting for it reads the answer from Postgres.
 */
export const McpInputAnswered = z.strictObject({ v: version });
export type McpInputAnswered = z.infer<typeof McpInputAnswered>;

export const RegistryChange = {
  created: 'created',
  updated: 'updated',
  deleted: 'deleted',
  /** An MCP tool's definition changed on its server: the tool is held until approved. */
  definition_changed: 'definition_changed',
  /**
   * An MCP server was switched off: its tools (listed) are disabled, and every tool service
   * closes its connections to the server named in `server`.
   */
  server_disabled: 'server_disabled',
} as const;
export type RegistryChange = (typeof RegistryChange)[keyof typeof RegistryChange];

/**
 * `evt.sys.registry.changed`: tools of a project were created, updated (incl. enabled or
 * disabled), deleted, or held because their MCP server changed their definition. Tool services drop their cached copies of those tools. The project is
 * the subject's; `tools` are full names (`<target>.<tool>`), empty for "any tool of the project".
 */
export const RegistryChangedEvent = z.strictObject({
  v: version,
  change: z.enum(RegistryChange),
  tools: z.array(z.string().min(3).max(129)).max(1000),
  /** The MCP server of a `server_disabled` change. */
  server: z.string().min(1).max(64).optional(),
});
export type RegistryChangedEvent = z.infer<typeof RegistryChangedEvent>;

/** An API key was revoked: every api instance drops it from its cache of verified keys. */
export const KeyRevokedEvent = z.strictObject({
  v: version,
  key_id: z.uuid(),
});
export type KeyRevokedEvent = z.infer<typeof KeyRevokedEvent>;

/** The catalog: a map typed over it makes a missing handler a compile error. */
export const Catalog = {
  tool_call: ToolCall,
  tool_result: ToolResultEvent,
  wakeup: Wakeup,
  cancel: CancelRequest,
  task_cancel: TaskCancelRequest,
  tool_progress: ToolProgressEvent,
  agent_task: AgentTaskEvent,
  agent_step: AgentStepEvent,
  agent_state: AgentStateEvent,
  agent_chunk: AgentChunk,
  mcp_refresh: McpRefreshRequest,
  mcp_refresh_reply: McpRefreshReply,
  mcp_rpc: McpRpcRequest,
  mcp_rpc_reply: McpRpcReply,
  mcp_ask: McpAskRequest,
  mcp_input_answered: McpInputAnswered,
  mcp_notice: McpNotice,
  registry_changed: RegistryChangedEvent,
  key_revoked: KeyRevokedEvent,
} as const;
export type MessageType = keyof typeof Catalog;
export type Message<T extends MessageType> = z.infer<(typeof Catalog)[T]>;
export type MessageHandlers<R> = { [T in MessageType]: (msg: Message<T>) => R };
