export {
  createClient,
  isOutcomeUnknown,
  PublishOutcomeUnknownError,
  ResultWaitTimeoutError,
} from './client.ts';
export type {
  Client,
  ClientOptions,
  ToolCallRequest,
  CallOptions,
  PublishOptions,
  ToolResult,
  Published,
} from './client.ts';
export { credentialIdOf, credsConnectOptions } from './credentials.ts';
export type { CredsConnectOptions } from './credentials.ts';
