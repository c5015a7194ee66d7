export { createClient, ResultWaitTimeoutError } from './client.ts';
export type {
  Client,
  ClientOptions,
  ToolCallRequest,
  CallOptions,
  ToolResult,
  Published,
} from './client.ts';
export { credentialIdOf, credsConnectOptions } from './credentials.ts';
export type { CredsConnectOptions } from './credentials.ts';
