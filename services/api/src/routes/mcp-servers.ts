// A project's MCP servers: register one (http or stdio), list them with their state, refresh
// their tools, switch one off and on again (its tools follow), delete one with its tools. Discovery does not run here: the api asks the tools
// service over `ctl.mcp.<server>.refresh` (core NATS request, one instance answers) and shows
// what it did. The tools service is where tenant traffic belongs: its egress checks refuse
// private addresses, it alone reads secret values for auth, it runs stdio servers inside a
// sandbox session of the project, and it holds the pooled connection the refresh reuses. The
// api thus never connects to a URL a tenant chose.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ID_PATTERN, OAuth2Auth } from '@toolmesh/protocol';
import type { RegistryStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';
import {
  createMcpDiscovery,
  RESERVED_SERVER_NAMES,
  ServerOut,
  ServerWithRefreshOut,
  serverOut,
} from './mcp-server-view.ts';

const HeaderName = z
  .string()
  .regex(/^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/, 'must be an HTTP header name');
const EnvName = z.string().regex(/^[A-Za-z_][A-Za-z0-9_]{0,127}$/, 'must be an identifier');
const SecretName = z.string().regex(ID_PATTERN, 'must be a secret name (1-64 of [A-Za-z0-9_-])');

const SecretAuth = z
  .strictObject({
    type: z.enum(['bearer', 'header']),
    secret: SecretName.describe('a project secret: PUT /v1/projects/:p/secrets/:name'),
    header: HeaderName.optional().describe('the header of type "header", e.g. X-API-Key'),
  })
  .refine((a) => (a.type === 'header') === (a.header !== undefined), {
    message: 'header is required with type "header" and only then',
  })
  .describe('credentials from a project secret; the value never appears in the api');
const Auth = z
  .discriminatedUnion('type', [SecretAuth, OAuth2Auth])
  .meta({ id: 'McpServerAuth' })
  .describe(
    'a project secret as bearer token or header, or OAuth 2.0 (type "oauth2", as for http tools)',
  );

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

const ServerParams = ProjectParams.extend({ name: Id });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const mcpServerRoutes =
  ({
    store,
    nc,
    config,
    logger,
    auth,
    registryEvents,
  }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const log = logger.child({ component: 'mcp-servers' });
    const { refresh, answer } = createMcpDiscovery({ store, nc, config, logger: log });

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
        if (RESERVED_SERVER_NAMES.has(req.body.name)) {
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
        const row = await store.mcpServers.get(project, name);
        if (!row) throw notFound('MCP server', name);
        if (!row.enabled) {
          throw new ApiError(
            'mcp_server_disabled',
            `MCP server ${JSON.stringify(name)} is disabled: enable it first (POST .../mcp-servers/${name}/enable)`,
          );
        }
        return answer(project, name, await refresh(project, name));
      },
    );

    app.post(
      '/projects/:project/mcp-servers/:name/disable',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary:
            'Switch an MCP server off without deleting it: its tools are disabled (calls fail tool_disabled) and its connections closed',
          params: ServerParams,
          response: {
            200: ServerOut.extend({
              tools_disabled: z.array(z.string()).describe('the tools this switched off'),
            }).meta({ id: 'McpServerDisabled' }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const done = await store.mcpServers.setEnabled(project, name, false);
        if (!done) throw notFound('MCP server', name);
        log.info({ project, server: name, tools: done.tools.length }, 'MCP server disabled');
        // Every tool service drops its cached copies and closes its connections to the server.
        await registryEvents.changed(project, 'server_disabled', done.tools, name);
        return { ...serverOut(done.server), tools_disabled: done.tools };
      },
    );

    app.post(
      '/projects/:project/mcp-servers/:name/enable',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary:
            'Switch a disabled MCP server on again: the tools its disabling switched off come back, and the server is listed again (refresh)',
          params: ServerParams,
          response: {
            200: ServerWithRefreshOut.extend({
              tools_enabled: z
                .array(z.string())
                .describe('the tools switched on again (before the refresh)'),
            }).meta({ id: 'McpServerEnabled' }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const done = await store.mcpServers.setEnabled(project, name, true);
        if (!done) throw notFound('MCP server', name);
        log.info({ project, server: name, tools: done.tools.length }, 'MCP server enabled');
        if (done.tools.length > 0) await registryEvents.changed(project, 'updated', done.tools);
        return {
          ...(await answer(project, name, await refresh(project, name))),
          tools_enabled: done.tools,
        };
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
