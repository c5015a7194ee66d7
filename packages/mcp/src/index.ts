export { connectMcp } from './connect.ts';
export type { McpEndpoint } from './connect.ts';
export { McpTransportKind, textOf } from './connection.ts';
export type {
  CallOptions,
  ConnectOptions,
  McpCallResult,
  McpConnection,
  McpAsker,
  McpNotification,
  McpRpcError,
  McpProgress,
  McpTool,
} from './connection.ts';
export { McpClientError, McpErrorReason, isMcpClientError } from './errors.ts';
export { MODERN_PROTOCOL_VERSION } from './modern.ts';
export type { ModernChannel, ModernReply, ModernRequestOptions } from './modern.ts';
export { mapToolNames } from './names.ts';
export type { ToolIdMapping } from './names.ts';
export { createSandboxStdioTransport } from './sandbox-transport.ts';
export type { SandboxStdioOptions, SandboxStdioTransport } from './sandbox-transport.ts';
