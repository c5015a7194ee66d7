// The registry domain's repositories, made over one Db (a pool or a transaction).
// What a project has: the project and its keys, tools and their definitions, MCP servers, OpenAPI imports, secrets, OAuth tokens and bus credentials.
import type { Db } from '../core/db.ts';
import { createProjectsRepo, type ProjectsRepo } from './projects.ts';
import { createToolsRepo, type ToolsRepo } from './tools.ts';
import { createMcpServersRepo, type McpServersRepo } from './mcp-servers.ts';
import { createOpenApiImportsRepo, type OpenApiImportsRepo } from './openapi-imports.ts';
import { createSecretsRepo, type SecretsRepo } from './secrets.ts';
import { createOAuthTokensRepo, type OAuthTokensRepo } from './oauth-tokens.ts';
import { createBusCredentialsRepo, type BusCredentialsRepo } from './bus-credentials.ts';

export interface RegistryStore {
  readonly projects: ProjectsRepo;
  readonly tools: ToolsRepo;
  readonly mcpServers: McpServersRepo;
  readonly openapiImports: OpenApiImportsRepo;
  readonly secrets: SecretsRepo;
  readonly oauthTokens: OAuthTokensRepo;
  readonly busCredentials: BusCredentialsRepo;
}

export function createRegistryStore(db: Db): RegistryStore {
  return {
    projects: createProjectsRepo(db),
    tools: createToolsRepo(db),
    mcpServers: createMcpServersRepo(db),
    openapiImports: createOpenApiImportsRepo(db),
    secrets: createSecretsRepo(db),
    oauthTokens: createOAuthTokensRepo(db),
    busCredentials: createBusCredentialsRepo(db),
  };
}
