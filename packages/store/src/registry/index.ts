export { createRegistryStore } from './store.ts';
export type { RegistryStore } from './store.ts';
export { KeyRole, PROJECT_KEY_PATTERN, hashKey, mergeSettings } from './projects.ts';
export type {
  Project,
  ApiKey,
  ProjectsRepo,
  ProjectQuotas,
  ProjectSettings,
  ProjectSettingsPatch,
} from './projects.ts';
export { ToolOrigin } from './tools.ts';
export type {
  ToolRecord,
  NewTool,
  ToolFacets,
  ToolFilter,
  ToolPatch,
  ToolUsage,
  ToolsRepo,
  ToolAnnotations,
} from './tools.ts';
export { McpServerState, McpTransport } from './mcp-servers.ts';
export type {
  DiscoveredTool,
  McpAuth,
  McpImportOutcome,
  McpImportSource,
  McpSecretHeader,
  McpServerPackage,
  ImportedMcpServer,
  McpServerRecord,
  McpServersRepo,
  McpSyncOutcome,
  McpToolSpec,
  NewMcpServer,
} from './mcp-servers.ts';
export { importSource } from './openapi-imports.ts';
export { definitionHash } from './tool-definitions.ts';
export type { PendingDefinition, ToolDefinition } from './tool-definitions.ts';
export type { ImportedTool, ImportOutcome, OpenApiImportsRepo } from './openapi-imports.ts';
export { createSecretBox, SecretsKeyError } from './secrets.ts';
export type { SealedSecret, SecretBox, SecretListing, SecretsRepo } from './secrets.ts';
export type { LockedOAuthTokens, OAuthTokenRow, OAuthTokensRepo } from './oauth-tokens.ts';
export type { BusCredential, BusCredentialsRepo } from './bus-credentials.ts';
