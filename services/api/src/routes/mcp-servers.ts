// A project's MCP servers: register one (http or stdio), list them with their state, refresh
// their tools, delete one with its tools. Discovery does not run here: the api asks the tools
// service over `ctl.mcp.<server>.refresh` (core NATS request, one instance answers) and shows
// what it did. The tools service is where tenant traffic belongs: its egress checks refuse
// private addresses, it alone reads secret values for auth, it runs stdio servers inside a
// sandbox session of the project, and it holds the pooled connection the refresh reuses. The
// api thus never connects to a URL a tenant chose.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  ID_PATTERN,
  SYSTEM_CHANNEL,
  createSubjects,
  decodeMessage,
  encodeMessage,
  type McpRefreshReply,
} from '@toolmesh/protocol';
import type { McpServerRecord } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams, iso } from '../schemas.ts';

/** Targets no MCP server may take: their tools are served by the skills service, or reserved. */
const RESERVED = new Set(['skills', 'builtin', 'sys']);

const HeaderName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'must be an HTTP header name');
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an identifier');
const SecretName = z.string().regex(ID_PATTERN, 'must be a secret name (1-64 of [A-Za-z0-9_-])');

const Auth = z
  .strictObject({
    type: z.enum(['bearer', 'header']),
    secret: SecretName.describe('a project secret: PUT /v1/projects/:p/secrets/:name'),
    header: HeaderName.optional().describe('the header of type "header", e.g. X-API-Key'),
  })
  .refine((a) => (a.type === 'header') === (a.header !== undefined), {
    message: 'header is required with type "header" and only then',
  })
  .describe('credentials from a project secret; the value never appears in the api');

const HttpServer = z.strictObject({
  name: Id.describe('the target of its tools: <name>.<tool>'),
  transport: z.literal('http'),
  url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .describe('streamable HTTP endpoint (SSE fallback)'),
  headers: z
    .record(HeaderName, z.string().max(4096))
    .refine((h) => Object.keys(h).length <= 32, 'at most 32 headers')
    .optional()
    .describe('plain headers sent on every request; put credentials in auth'),
  auth: Auth.optional(),
});
const StdioServer = z.strictObject({
  name: Id.describe('the target of its tools: <name>.<tool>'),
  transport: z.literal('stdio'),
  command: z.string().min(1).max(4096).describe('run inside a sandbox session of the project'),
  args: z.array(z.string().max(4096)).max(64).optional(),
  env: z
    .record(EnvName, z.string().max(16_384))
    .refine((e) => Object.keys(e).length <= 64, 'at most 64 variables')
    .optional(),
});

const RefreshOut = z
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

const ServerOut = z
  .object({
    name: z.string(),
    transport: z.enum(['http', 'stdio']),
    url: z.string().optional(),
    header_names: z.array(z.string()).optional().describe('values are not shown'),
    auth: z
      .object({ type: z.string(), secret: z.string(), header: z.string().optional() })
      .optional(),
    command: z.string().optional(),
    args: z.array(z.string()).optional(),
    env_names: z.array(z.string()).optional().describe('values are not shown'),
    state: z.enum(['pending', 'connected', 'error']),
    last_error: z.string().nullable(),
    tool_count: z.number().int(),
    refreshed_at: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'McpServer' });
const ServerWithRefreshOut = ServerOut.extend({ refresh: RefreshOut.optional() }).meta({
  id: 'McpServerRefreshed',
});

const serverOut = (s: McpServerRecord) => ({
  name: s.name,
  transport: s.transport,
  ...(s.transport === 'http'
    ? {
        url: s.url ?? '',
        header_names: Object.keys(s.headers),
        ...(s.auth ? { auth: s.auth } : {}),
      }
    : { command: s.command ?? '', args: s.args, env_names: Object.keys(s.env) }),
  state: s.state,
  last_error: s.last_error,
  tool_count: s.tool_count,
  refreshed_at: iso(s.refreshed_at),
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});

const ServerParams = ProjectParams.extend({ name: Id });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const mcpServerRoutes =
  ({ store, nc, config, logger, auth, registryEvents }: RouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const subjects = createSubjects(config.nats.subject_root);
    const log = logger.child({ component: 'mcp-servers' });

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

    app.post(
      '/projects/:project/mcp-servers',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary:
            'Register an MCP server and discover its tools as <name>.<tool> (origin mcp); state says whether it connected',
          params: ProjectParams,
          body: z.discriminatedUnion('transport', [HttpServer, StdioServer]),
          response: { 201: ServerWithRefreshOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        if (RESERVED.has(req.body.name)) {
          throw new ApiError(
            'reserved_name',
            `${JSON.stringify(req.body.name)} is reserved; pick another server name`,
          );
        }
        const created = await store.mcpServers.create(project, req.body);
        if (!created) {
          throw new ApiError(
            'conflict',
            `MCP server ${JSON.stringify(req.body.name)} already exists`,
          );
        }
        const done = await refresh(project, created.name);
        return reply.status(201).send(await answer(project, created.name, done));
      },
    );

    app.get(
      '/projects/:project/mcp-servers',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary: "List the project's MCP servers with their state, last error and tool count",
          params: ProjectParams,
          response: { 200: z.object({ mcp_servers: z.array(ServerOut) }), ...errors },
        },
      },
      async (req) => ({
        mcp_servers: (await store.mcpServers.list(req.params.project)).map(serverOut),
      }),
    );

    app.get(
      '/projects/:project/mcp-servers/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary: 'One MCP server: state (pending, connected, error), last error, tool count',
          params: ServerParams,
          response: { 200: ServerOut, ...errors },
        },
      },
      async (req) => {
        const row = await store.mcpServers.get(req.params.project, req.params.name);
        if (!row) throw notFound('MCP server', req.params.name);
        return serverOut(row);
      },
    );

    app.post(
      '/projects/:project/mcp-servers/:name/refresh',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary:
            'List the server again: new tools added, changed ones updated, vanished ones disabled (not deleted)',
          params: ServerParams,
          response: { 200: ServerWithRefreshOut, ...errors },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        if (!(await store.mcpServers.get(project, name))) throw notFound('MCP server', name);
        return answer(project, name, await refresh(project, name));
      },
    );

    app.delete(
      '/projects/:project/mcp-servers/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary: 'Delete an MCP server and its tools; usage history is kept',
          params: ServerParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, name } = req.params;
        const tools = await store.mcpServers.delete(project, name);
        if (!tools) throw notFound('MCP server', name);
        log.info({ project, server: name, tools: tools.length }, 'MCP server deleted');
        // The tool services drop their cached copies now rather than at their cache's TTL.
        if (tools.length > 0) await registryEvents.changed(project, 'deleted', tools);
        return reply.status(204).send(null);
      },
    );
  };
