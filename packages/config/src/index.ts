export { loadConfig } from './load.ts';
export type { LoadConfigOptions } from './load.ts';
export { ConfigError } from './errors.ts';
export type { ConfigIssue } from './errors.ts';
export {
  configSchema,
  LogLevel,
  ArtifactsKind,
  SandboxProviderKind,
  ReuseMode,
  MIN_ADMIN_KEY_LENGTH,
} from './schema.ts';
export type {
  Config,
  ServiceConfig,
  LogConfig,
  NatsConfig,
  PostgresConfig,
  ToolsConfig,
  ApiConfig,
  SecretsConfig,
  ArtifactsConfig,
  SkillsConfig,
  SandboxConfig,
  E2bConfig,
  ReaperConfig,
  QuotasConfig,
  LlmConfig,
  AgentConfig,
  McpOauthConfig,
  SchedulesConfig,
  BuiltinConfig,
  RetentionConfig,
  OtelConfig,
  CatalogConfig,
} from './schema.ts';
export { redactConfig, redactUrls, secretsOf, createRedactor, MASK } from './redact.ts';
export type { Redactor } from './redact.ts';
export { ENV_PREFIX } from './env.ts';
export { parseHostPort, parseOrigin, defaultPort } from './hosts.ts';
export type { HostPort, WebOrigin } from './hosts.ts';
export type { Env } from './env.ts';
