// The configuration schema: every section and key a process reads (the sections live in
// schema-platform, schema-tools, schema-sandbox and schema-agents), composed here with the checks
// that tie keys of different sections together. Every key has a default, so an empty file is a
// valid configuration and the root config.toml only documents them.
import { z } from 'zod';
import { expected } from './schema-kit.ts';
import {
  serviceSchema,
  logSchema,
  natsSchema,
  postgresSchema,
  secretsSchema,
  apiSchema,
  otelSchema,
} from './schema-platform.ts';
import {
  toolsSchema,
  quotasSchema,
  builtinSchema,
  mcpOauthSchema,
  catalogSchema,
} from './schema-tools.ts';
import {
  artifactsSchema,
  skillsSchema,
  SandboxProviderKind,
  sandboxSchema,
  reaperSchema,
  e2bSchema,
  retentionSchema,
} from './schema-sandbox.ts';
import { llmSchema, agentSchema, schedulesSchema } from './schema-agents.ts';

export { LogLevel, MIN_ADMIN_KEY_LENGTH } from './schema-platform.ts';
export { ArtifactsKind, ReuseMode, SandboxProviderKind } from './schema-sandbox.ts';

// prefault, not default: a missing section is parsed from `{}` so its keys get their defaults.
export const configSchema = z
  .strictObject(
    {
      service: serviceSchema.prefault({}),
      log: logSchema.prefault({}),
      nats: natsSchema.prefault({}),
      postgres: postgresSchema.prefault({}),
      tools: toolsSchema.prefault({}),
      secrets: secretsSchema.prefault({}),
      api: apiSchema.prefault({}),
      artifacts: artifactsSchema.prefault({}),
      skills: skillsSchema.prefault({}),
      sandbox: sandboxSchema.prefault({}),
      e2b: e2bSchema.prefault({}),
      reaper: reaperSchema.prefault({}),
      quotas: quotasSchema.prefault({}),
      llm: llmSchema.prefault({}),
      agent: agentSchema.prefault({}),
      schedules: schedulesSchema.prefault({}),
      builtin: builtinSchema.prefault({}),
      retention: retentionSchema.prefault({}),
      mcp_oauth: mcpOauthSchema.prefault({}),
      otel: otelSchema.prefault({}),
      catalog: catalogSchema.prefault({}),
    },
    expected('a table'),
  )
  .superRefine((config, ctx) => {
    if (config.sandbox.provider === SandboxProviderKind.e2b && config.e2b.api_key === '') {
      ctx.addIssue({
        code: 'custom',
        path: ['e2b', 'api_key'],
        message: 'must be set when sandbox.provider is "e2b", got ""',
      });
    }
  });

export type Config = z.infer<typeof configSchema>;
export type ServiceConfig = z.infer<typeof serviceSchema>;
export type LogConfig = z.infer<typeof logSchema>;
export type NatsConfig = z.infer<typeof natsSchema>;
export type PostgresConfig = z.infer<typeof postgresSchema>;
export type ToolsConfig = z.infer<typeof toolsSchema>;
export type ApiConfig = z.infer<typeof apiSchema>;
export type SecretsConfig = z.infer<typeof secretsSchema>;
export type ArtifactsConfig = z.infer<typeof artifactsSchema>;
export type SkillsConfig = z.infer<typeof skillsSchema>;
export type SandboxConfig = z.infer<typeof sandboxSchema>;
export type E2bConfig = z.infer<typeof e2bSchema>;
export type ReaperConfig = z.infer<typeof reaperSchema>;
export type QuotasConfig = z.infer<typeof quotasSchema>;
export type LlmConfig = z.infer<typeof llmSchema>;
export type AgentConfig = z.infer<typeof agentSchema>;
export type McpOauthConfig = z.infer<typeof mcpOauthSchema>;
export type SchedulesConfig = z.infer<typeof schedulesSchema>;
export type BuiltinConfig = z.infer<typeof builtinSchema>;
export type RetentionConfig = z.infer<typeof retentionSchema>;
export type OtelConfig = z.infer<typeof otelSchema>;
export type CatalogConfig = z.infer<typeof catalogSchema>;

/** The configuration with nothing set; the type of each default is the type of its key. */
export const configDefaults: Config = configSchema.parse({});
