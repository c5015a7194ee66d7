// How the api shows an MCP server, and how it asks the tools service to discover one: shared by
// registration (mcp-servers.ts) and import (mcp-import.ts). Discovery does not run in the api: a
// core NATS request on `ctl.mcp.<server>.refresh` is answered by one tools-service instance.
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { z } from 'zod';
import type { Config } from '@toolmesh/config';
import {
  SYSTEM_CHANNEL,
  createSubjects,
  decodeMessage,
  encodeMessage,
  type McpRefreshReply,
} from '@toolmesh/protocol';
import type { McpServerRecord, RegistryStore } from '@toolmesh/store';
import { notFound } from '../errors.ts';
import { iso } from '../schemas.ts';

/** Targets no MCP server may take: their tools are served by the skills service, or reserved. */
export const RESERVED_SERVER_NAMES = new Set(['skills', 'builtin', 'sys']);

export const RefreshOut = z
  .object({
    added: z.array(z.string()),
    updated: z.array(z.string()),
    disabled: z.array(z.string()).describe('tools the server no longer lists: disabled, kept'),
    refused: z.array(z.object({ tool: z.string(), reason: z.string() })),
    held: z
      .array(z.string())
      .describe(
        'tools whose definition changed: held (calls fail definition_changed) until approved',
      ),
  })
  .meta({ id: 'McpRefresh' });

export const ServerOut = z
  .object({
    name: z.string(),
    transport: z.enum(['http', 'stdio']),
    url: z.string().optional(),
    header_names: z.array(z.string()).optional().describe('values are not shown'),
    auth: z
      .object({ type: z.string() })
      .catchall(z.string())
      .optional()
      .describe('the auth configuration: secret names only, never values'),
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    env_names: z.array(z.string()).optional().describe('values are not shown'),
    secret_env: z
      .record(z.string(), z.string())
      .optional()
      .describe('environment variable -> the project secret it takes (stdio)'),
    secret_headers: z
      .record(z.string(), z.array(z.string()))
      .optional()
      .describe('header -> the project secrets its value is made of (http)'),
    package: z
      .object({ registry_type: z.literal('npm'), identifier: z.string(), version: z.string() })
      .optional()
      .describe('the npm package a stdio server runs, installed once per version'),
    import_source: z
      .object({ name: z.string(), version: z.string(), catalog: z.string().optional() })
      .optional()
      .describe('the server.json entry it was imported from'),
    enabled: z
      .boolean()
      .describe('false: switched off; its tools are disabled and its connections closed'),
    state: z.enum(['pending', 'connected', 'error']),
    last_error: z.string().nullable(),
    tool_count: z.number().int(),
    refreshed_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'McpServer' });
export const ServerWithRefreshOut = ServerOut.extend({ refresh: RefreshOut.optional() }).meta({
  id: 'McpServerRefreshed',
});

export const serverOut = (s: McpServerRecord) => ({
  name: s.name,
  transport: s.transport,
  ...(s.transport === 'http'
    ? {
        url: s.url ?? '',
        header_names: Object.keys(s.headers),
        ...(s.auth ? { auth: s.auth } : {}),
        ...(Object.keys(s.secret_headers).length > 0
          ? {
              secret_headers: Object.fromEntries(
                Object.entries(s.secret_headers).map(([h, v]) => [
                  h,
                  'secret' in v ? [v.secret] : Object.values(v.secrets),
                ]),
              ),
            }
          : {}),
      }
    : {
        command: s.command ?? '',
        args: s.args,
        env_names: Object.keys(s.env),
        ...(Object.keys(s.secret_env).length > 0 ? { secret_env: s.secret_env } : {}),
        ...(s.package ? { package: s.package } : {}),
      }),
  ...(s.import_source ? { import_source: s.import_source } : {}),
  enabled: s.enabled,
  state: s.state,
  last_error: s.last_error,
  tool_count: s.tool_count,
  refreshed_at: iso(s.refreshed_at),
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});

export interface McpDiscoveryDeps {
  store: RegistryStore;
  nc: NatsConnection;
  config: Config;
  logger: Logger;
}

export function createMcpDiscovery({ store, nc, config, logger: log }: McpDiscoveryDeps) {
  const subjects = createSubjects(config.nats.subject_root);

  /** Asks the tools service to discover; a failure to get an answer is the server's error. */
  async function refresh(project: string, name: string): Promise<McpRefreshReply | undefined> {
    const subject = subjects.mcpRefresh({ project, channel: SYSTEM_CHANNEL, server: name });
    try {
      const msg = await nc.request(subject, encodeMessage('mcp_refresh', { v: 1 }), {
        timeout: config.api.mcp_refresh_wait_ms,
      });
      return decodeMessage('mcp_refresh_reply', msg.data);
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      const message = timedOut
        ? `the tools service did not finish the discovery within ${config.api.mcp_refresh_wait_ms} ms`
        : 'no tools service answered the discovery request (is services/tools running?)';
      log.warn({ err, project, server: name }, message);
      await store.mcpServers.recordError(project, name, message);
      return undefined;
    }
  }

  async function answer(project: string, name: string, reply: McpRefreshReply | undefined) {
    const row = await store.mcpServers.get(project, name);
    if (!row) throw notFound('MCP server', name);
    return {
      ...serverOut(row),
      ...(reply
        ? {
            refresh: {
              added: reply.added,
              updated: reply.updated,
              disabled: reply.disabled,
              refused: reply.refused,
              held: reply.held ?? [],
            },
          }
        : {}),
    };
  }

  return { refresh, answer };
}
