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
export { connectMesh, DEFAULT_NATS_URL } from './connect.ts';
export type { ConnectMeshOptions, Mesh } from './connect.ts';
export { credentialIdOf, credsConnectOptions } from './credentials.ts';
export type { CredsConnectOptions } from './credentials.ts';
export { explainNatsConnectError, explainNoStream } from './explain.ts';
export { describeStack, findLocalStack } from './local-stack.ts';
export type { FindLocalStackOptions, LocalStack } from './local-stack.ts';
