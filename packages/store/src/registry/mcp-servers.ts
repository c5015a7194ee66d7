// A project's MCP servers (resource.mcp_servers) and the registry rows of their tools: servers
// created, imported (from a server.json entry, updated in place on a re-import), listed,
// switched off and on with their tools, and deleted with them. Syncing one discovery of a
// server's tools into the registry is mcp-tools-sync.ts.
import { v7 as uuidv7 } from 'uuid';
import type { OAuth2Auth } from '@toolmesh/protocol';
import type { Db } from '../core/db.ts';
import type { DiscoveredTool, McpSyncOutcome } from './mcp-tool-records.ts';
import { syncMcpTools } from './mcp-tools-sync.ts';

export type { DiscoveredTool, McpSyncOutcome, McpToolSpec } from './mcp-tool-records.ts';

export const McpTransport = { http: 'http', stdio: 'stdio' } as const;
export type McpTransport = (typeof McpTransport)[keyof typeof McpTransport];

export const McpServerState = {
  pending: 'pending',
  connected: 'connected',
  error: 'error',
} as const;
export type McpServerState = (typeof McpServerState)[keyof typeof McpServerState];

/**
 * How an http server authenticates: a project secret's value, as bearer token or header; or
 * OAuth 2.0 (tokens from a token endpoint whose credentials are project secrets).
 */
export type McpAuth =
  | {
      type: 'bearer' | 'header';
      secret: string;
      header?: string;
    }
  | OAuth2Auth;

/** The MCP Registry entry an imported server came from. */
export interface McpImportSource {
  /** The server.json `name` (reverse DNS, e.g. io.github.acme/weather): what a re-import matches. */
  name: string;
  version: string;
  /** The catalog entry it was taken from, when it was. */
  catalog?: string;
}

/** The package an imported stdio server runs, installed once per version. */
export interface McpServerPackage {
  registry_type: 'npm';
  identifier: string;
  version: string;
}

/** A header whose value comes from project secrets: whole, or filled into a template. */
export type McpSecretHeader =
  { secret: string } | { template: string; secrets: Record<string, string> };

export interface McpServerRecord {
  server_id: string;
  project_id: string;
  name: string;
  transport: McpTransport;
  url: string | null;
  headers: Record<string, string>;
  auth: McpAuth | null;
  command: string | null;
  args: string[];
  env: Record<string, string>;
  import_source: McpImportSource | null;
  package: McpServerPackage | null;
  /** Environment variable -> project secret (stdio). */
  secret_env: Record<string, string>;
  /** Header -> project secret(s) (http). */
  secret_headers: Record<string, McpSecretHeader>;
  /** Grows with each update of an imported server: a pooled connection to an older one is stale. */
  revision: number;
  /** Off: its tools are disabled and its connections closed until it is switched on again. */
  enabled: boolean;
  state: McpServerState;
  last_error: string | null;
  tool_count: number;
  refreshed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export type NewMcpServer =
  | {
      name: string;
      transport: 'http';
      url: string;
      headers?: Record<string, string>;
      auth?: McpAuth;
    }
  | {
      name: string;
      transport: 'stdio';
      command: string;
      args?: string[];
      env?: Record<string, string>;
    };

/** A server as an import writes it: the same shapes, plus where it came from and its secrets. */
export type ImportedMcpServer = NewMcpServer & {
  import_source: McpImportSource;
  package?: McpServerPackage;
  secret_env?: Record<string, string>;
  secret_headers?: Record<string, McpSecretHeader>;
};

export type McpImportOutcome =
  | { outcome: 'created' | 'updated'; server: McpServerRecord; tools: string[] }
  /** The name is held by a server registered by hand, or imported from another entry. */
  | { outcome: 'conflict'; message: string };

export interface McpServersRepo {
  /** Undefined when the name is taken in the project. */
  create(projectId: string, s: NewMcpServer): Promise<McpServerRecord | undefined>;
  get(projectId: string, name: string): Promise<McpServerRecord | undefined>;
  list(projectId: string): Promise<McpServerRecord[]>;
  /**
   * Creates an imported server, or updates the one imported earlier from the same entry (its
   * revision grows; `tools` are its tool names, whose cached copies must be dropped).
   */
  importServer(projectId: string, s: ImportedMcpServer): Promise<McpImportOutcome>;
  /** Deletes the server and its tools; the deleted tool names, or undefined when unknown. */
  delete(projectId: string, name: string): Promise<string[] | undefined>;
  /**
   * Applies a discovery; undefined when the server is gone (deleted meanwhile), 'disabled' when
   * it was switched off meanwhile (nothing written).
   */
  sync(
    projectId: string,
    name: string,
    tools: DiscoveredTool[],
    opts?: { pin?: boolean },
  ): Promise<McpSyncOutcome | 'disabled' | undefined>;
  /**
   * Switches a server off or on with its tools: off disables every enabled tool of the server
   * and marks it (`spec.server_disabled`); on enables the marked ones. The server and the tool
   * names switched, or undefined when the server is unknown.
   */
  setEnabled(
    projectId: string,
    name: string,
    enabled: boolean,
  ): Promise<{ server: McpServerRecord; tools: string[] } | undefined>;
  /** A discovery failed: state error with the message; the tools are left as they were. */
  recordError(
    projectId: string,
    name: string,
    message: string,
  ): Promise<McpServerRecord | undefined>;
}

const COLUMNS = `server_id, project_id, name, transport, url, headers, auth, command, args, env,
  import_source, package, secret_env, secret_headers, revision, enabled, state, last_error,
  tool_count, refreshed_at, created_at, updated_at`;

/** The endpoint columns of a server, in the order of the insert and update below. */
function endpointValues(s: ImportedMcpServer): unknown[] {
  return s.transport === 'http'
    ? ['http', s.url, s.headers ?? {}, s.auth ?? null, null, [], {}]
    : ['stdio', null, {}, null, s.command, s.args ?? [], s.env ?? {}];
}

export function createMcpServersRepo(db: Db): McpServersRepo {
  return {
    importServer: (projectId, s) =>
      db.tx(async (tx) => {
        const held = await tx.query<McpServerRecord>(
          'mcp_servers_import_find',
          `SELECT ${COLUMNS} FROM resource.mcp_servers
           WHERE project_id = $1 AND (name = $2 OR import_source->>'name' = $3) FOR UPDATE`,
          [projectId, s.name, s.import_source.name],
        );
        const mine = held.find((r) => r.import_source?.name === s.import_source.name);
        const other = held.find((r) => r !== mine);
        if (mine && mine.name !== s.name) {
          return {
            outcome: 'conflict',
            message: `${s.import_source.name} is already imported as MCP server ${JSON.stringify(mine.name)}; import it under that name or delete it first`,
          };
        }
        if (other) {
          return {
            outcome: 'conflict',
            message: `MCP server ${JSON.stringify(s.name)} already exists and was not imported from ${s.import_source.name}; pick another name`,
          };
        }
        const extra = [
          s.import_source,
          s.package ?? null,
          s.secret_env ?? {},
          s.secret_headers ?? {},
        ];
        if (!mine) {
          const rows = await tx.query<McpServerRecord>(
            'mcp_servers_import_insert',
            `INSERT INTO resource.mcp_servers
               (server_id, project_id, name, transport, url, headers, auth, command, args, env,
                import_source, package, secret_env, secret_headers)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
             RETURNING ${COLUMNS}`,
            [uuidv7(), projectId, s.name, ...endpointValues(s), ...extra],
          );
          return { outcome: 'created', server: rows[0]!, tools: [] };
        }
        const rows = await tx.query<McpServerRecord>(
          'mcp_servers_import_update',
          `UPDATE resource.mcp_servers SET
             transport = $3, url = $4, headers = $5, auth = $6, command = $7, args = $8, env = $9,
             import_source = $10, package = $11, secret_env = $12, secret_headers = $13,
             revision = revision + 1, updated_at = now()
           WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
          [projectId, s.name, ...endpointValues(s), ...extra],
        );
        const tools = await tx.query<{ name: string }>(
          'mcp_servers_import_tools',
          `SELECT name FROM resource.tools
           WHERE project_id = $1 AND origin = 'mcp' AND spec->>'server' = $2`,
          [projectId, s.name],
        );
        return { outcome: 'updated', server: rows[0]!, tools: tools.map((t) => t.name) };
      }),
    create: async (projectId, s) =>
      (
        await db.query<McpServerRecord>(
          'mcp_servers_create',
          `INSERT INTO resource.mcp_servers
             (server_id, project_id, name, transport, url, headers, auth, command, args, env)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
           ON CONFLICT (project_id, name) DO NOTHING RETURNING ${COLUMNS}`,
          s.transport === 'http'
            ? [
                uuidv7(),
                projectId,
                s.name,
                'http',
                s.url,
                s.headers ?? {},
                s.auth ?? null,
                null,
                [],
                {},
              ]
            : [
                uuidv7(),
                projectId,
                s.name,
                'stdio',
                null,
                {},
                null,
                s.command,
                s.args ?? [],
                s.env ?? {},
              ],
        )
      )[0],
    get: async (projectId, name) =>
      (
        await db.query<McpServerRecord>(
          'mcp_servers_get',
          `SELECT ${COLUMNS} FROM resource.mcp_servers WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    list: (projectId) =>
      db.query<McpServerRecord>(
        'mcp_servers_list',
        `SELECT ${COLUMNS} FROM resource.mcp_servers WHERE project_id = $1 ORDER BY name`,
        [projectId],
      ),
    delete: (projectId, name) =>
      db.tx(async (tx) => {
        const gone = await tx.query(
          'mcp_servers_delete',
          `DELETE FROM resource.mcp_servers WHERE project_id = $1 AND name = $2 RETURNING server_id`,
          [projectId, name],
        );
        if (gone.length === 0) return undefined;
        const tools = await tx.query<{ name: string }>(
          'mcp_servers_delete_tools',
          `DELETE FROM resource.tools
           WHERE project_id = $1 AND origin = 'mcp' AND spec->>'server' = $2 RETURNING name`,
          [projectId, name],
        );
        return tools.map((t) => t.name);
      }),
    sync: (projectId, name, tools, opts = {}) =>
      db.tx((tx) => syncMcpTools(tx, projectId, name, tools, opts)),
    setEnabled: (projectId, name, enabled) =>
      db.tx(async (tx) => {
        const server = (
          await tx.query<McpServerRecord>(
            'mcp_servers_set_enabled',
            `UPDATE resource.mcp_servers SET enabled = $3,
               updated_at = CASE WHEN enabled = $3 THEN updated_at ELSE now() END
             WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
            [projectId, name, enabled],
          )
        )[0];
        if (!server) return undefined;
        const tools = await tx.query<{ name: string }>(
          enabled ? 'mcp_servers_enable_tools' : 'mcp_servers_disable_tools',
          enabled
            ? `UPDATE resource.tools SET enabled = true,
                 spec = spec - 'server_disabled', updated_at = now()
               WHERE project_id = $1 AND origin = 'mcp' AND spec->>'server' = $2
                 AND (spec->>'server_disabled')::boolean
               RETURNING name`
            : `UPDATE resource.tools SET enabled = false,
                 spec = spec || '{"server_disabled": true}'::jsonb, updated_at = now()
               WHERE project_id = $1 AND origin = 'mcp' AND spec->>'server' = $2 AND enabled
               RETURNING name`,
          [projectId, name],
        );
        return { server, tools: tools.map((t) => t.name).sort() };
      }),
    recordError: async (projectId, name, message) =>
      (
        await db.query<McpServerRecord>(
          'mcp_servers_error',
          `UPDATE resource.mcp_servers SET state = 'error', last_error = $3,
             refreshed_at = now(), updated_at = now()
           WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
          [projectId, name, message.slice(0, 2000)],
        )
      )[0],
  };
}
