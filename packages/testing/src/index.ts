// Test fixtures with real servers: an authenticated NATS server with JetStream (the deployment's
// users) and a fresh Postgres database per test file, plus the local server starters that
// `pnpm stack` also runs the mesh on.
export { startTestNatsCluster, startTestNatsServer, useNats } from './nats.ts';
export { projectStreamMaker } from './project-streams.ts';
export type { ProjectStreamMaker } from './project-streams.ts';
export type {
  TestNats,
  TestNatsAuth,
  TestNatsCluster,
  TestNatsServer,
  TestNatsServerOptions,
  TestProjectCredential,
} from './nats.ts';
export { allowViolations } from './violations.ts';
export type { Violation } from './violations.ts';
export { usePostgres } from './postgres.ts';
export type { TestPostgres } from './postgres.ts';
export { startLocalNats } from './local-nats.ts';
export type { LocalNats, LocalNatsOptions } from './local-nats.ts';
export { startNatsCluster } from './nats-cluster.ts';
export type { NatsCluster, NatsClusterOptions } from './nats-cluster.ts';
export { startLocalPostgres } from './local-postgres.ts';
export type { LocalPostgres, LocalPostgresOptions } from './local-postgres.ts';
export { freePort } from './ports.ts';
export { sandboxRootEnv } from './sandbox-root.ts';
export { dockerAvailable } from './docker.ts';
export { startFakeGcs, type FakeGcs, type FakeGcsObject } from './fake-gcs.ts';
export { startFakeE2b } from './fake-e2b.ts';
export type { FakeE2b, FakeE2bOptions, FakeE2bRequest, FakeE2bSandboxView } from './fake-e2b.ts';
export { startScriptedOpenAI } from './fake-openai.ts';
export { demoModelReply } from './fake-openai-demo.ts';
export type {
  ScriptedOpenAI,
  ScriptedOpenAIOptions,
  ScriptedReply,
  ScriptedToolCall,
  ScriptStep,
  RecordedChatRequest,
  ChatRequest,
  ChatMessage,
} from './fake-openai.ts';
export { startMcpHttpServer, MCP_STDIO_SERVER_PATH } from './mcp-http-server.ts';
export { bundleMcpStdioServer, MCP_ENV_SERVER_PATH } from './mcp-stdio-bundle.ts';
export type { McpStdioBundle } from './mcp-stdio-bundle.ts';
export type { McpHttpFixture } from './mcp-http-server.ts';
export { FIXTURE_TOOLS, INTERVIEW_TOOL } from './mcp-fixture-tools.ts';
export { startMcpEverythingServer } from './mcp-everything-server.ts';
export type { McpEverythingFixture } from './mcp-everything-server.ts';
export type { EverythingState } from './mcp-everything-features.ts';
export type { EverythingTriggers } from './mcp-everything-triggers.ts';
export type { FixtureState, FixtureTool } from './mcp-fixture-tools.ts';
export { normalizePackageName, startPackageIndex } from './package-index.ts';
export type { PackageIndex, PackageIndexOptions } from './package-index.ts';
