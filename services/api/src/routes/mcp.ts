// The mesh as an MCP server over streamable HTTP: POST, GET (the server's notification stream)
// and DELETE on /v1/projects/:project/mcp, with the project's keys as bearer tokens like every
// other route. 2025-era sessions (initialize, Mcp-Session-Id; mcp/sessions.ts) live in this
// instance's memory; what they refer to (executions, cards) is durable, so a client that lost
// its session starts a new one and, with its idempotency key, gets the same call back. A session
// belongs to the project it was opened for: another project's key gets 404 as for anything of
// another project. `?agent=<id>` at initialize limits the session's tools to that agent's tool
// set. Every request first passes the Host and Origin check (mcp/host-guard.ts, DNS rebinding).
// A 2025-11-25 session's SSE streams open with a priming event and resume from Last-Event-ID
// within the session (mcp/event-store.ts); the 2026-07-28 revision has no resumption.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import {
  DEFAULT_NEGOTIATED_PROTOCOL_VERSION,
  SUPPORTED_PROTOCOL_VERSIONS,
  isInitializeRequest,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';
import { createSubjects } from '@toolmesh/protocol';
import type { AgentsStore, CallsStore, RegistryStore, SkillsStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';
import { createMeshCalls } from '../mcp/calls.ts';
import { createApprovalDecider } from '../approvals.ts';
import { createFacade } from '../mcp/facade.ts';
import type { FacadeScope } from '../mcp/facade-tools.ts';
import { createMcpAuth } from '../mcp/oauth.ts';
import { createToolCache } from '../mcp/tool-cache.ts';
import { createModernHandlers } from '../mcp/modern.ts';
import { createUpstream } from '../mcp/upstream.ts';
import { createUpstreamNotices } from '../mcp/notices.ts';
import { createSessions, type OpenedSession } from '../mcp/sessions.ts';
import { readArtifact } from '../mcp/resources.ts';
import { createHostGuard } from '../mcp/host-guard.ts';
import { isEventStream, sendWebResponse, toWebRequest, withPrimingEvent } from '../mcp/web-http.ts';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { createInputStates } from '../mcp/modern-input.ts';
import { createInputAnswers } from '../input-answers.ts';
import { inputRequestOut } from './input-requests.ts';
import { HEADER_MISMATCH, paramHeaderMismatch } from '../mcp/param-headers.ts';
import { holdStream } from '../slots.ts';
import type { FastifyReply, FastifyRequest } from 'fastify';

/** Resources one `subscriptions/listen` may name: each is a subscription on its server. */
const MAX_LISTENED_RESOURCES = 100;

const JsonRpcError = z
  .object({
    jsonrpc: z.literal('2.0'),
    error: z.object({
      code: z.number(),
      message: z.string(),
      data: z.object({ code: z.string() }).optional(),
    }),
    id: z.null(),
  })
  .describe(
    'a JSON-RPC error: no such session, no session id where one is needed, or (403) a Host or Origin header that is not allowed (data.code host_not_allowed, origin_not_allowed)',
  );
const errors = {
  400: z.union([ErrorResponse, JsonRpcError]),
  401: ErrorResponse,
  403: z
    .union([ErrorResponse, JsonRpcError])
    .describe('an OAuth token without the scope; a Host or Origin header that is not allowed'),
  404: z.union([ErrorResponse, JsonRpcError]),
  429: ErrorResponse.describe(
    "the project's share is taken: mcp_session_limit, stream_limit or inflight_limit",
  ),
  503: ErrorResponse.describe('the instance is full: mcp_session_capacity or stream_capacity'),
};

/** A JSON-RPC error answered before any session exists (the SDK's own shape for these). */
const rpcError = (code: number, message: string) => ({
  jsonrpc: '2.0' as const,
  error: { code, message },
  id: null,
});

/** The 1.x transport's name for a session's GET stream, under which it stores that stream's events. */
const GET_STREAM = '_GET_stream';

/**
 * Does this request's revision take a priming event? Its empty data breaks clients older than
 * 2025-11-25, which parse every data line as JSON: the SDK's own rule for POST streams.
 */
function primes(req: FastifyRequest): boolean {
  const header = req.headers['mcp-protocol-version'];
  const version = typeof header === 'string' ? header : DEFAULT_NEGOTIATED_PROTOCOL_VERSION;
  return SUPPORTED_PROTOCOL_VERSIONS.includes(version) && version >= '2025-11-25';
}

/** The request's Mcp-Session-Id, if it names one. */
function sessionIdOf(req: FastifyRequest): string | undefined {
  const header = req.headers['mcp-session-id'];
  return Array.isArray(header) ? header[0] : header;
}

/** The resource URIs a `subscriptions/listen` request names (`notifications.resourceSubscriptions`). */
function listenedResources(body: unknown): string[] {
  const uris = (body as { params?: { notifications?: { resourceSubscriptions?: unknown } } })
    ?.params?.notifications?.resourceSubscriptions;
  return Array.isArray(uris) ? uris.filter((u): u is string => typeof u === 'string') : [];
}

/** Who decides an approval answered through the facade: the key, or `mcp:oauth` for a token. */
const mcpCallerOf = (req: FastifyRequest): string => {
  const p = req.principal;
  return p?.kind === 'project' ? `mcp:${p.keyId}` : 'mcp:admin';
};

export const mcpRoutes =
  (
    deps: RouteDeps<CallsStore & RegistryStore & SkillsStore & AgentsStore>,
  ): FastifyPluginAsyncZod =>
  async (app) => {
    const { store, auth, nc, config, streams } = deps;
    const log = deps.logger.child({ component: 'mcp' });
    const calls = createMeshCalls(deps);
    const decider = createApprovalDecider(deps);
    const subjects = createSubjects(config.nats.subject_root);
    const tools = createToolCache({
      store,
      nc,
      subjects,
      ttlMs: config.tools.registry_cache_ttl_ms,
      logger: log,
    });
    app.addHook('onClose', () => tools.close());
    const upstream = createUpstream({
      nc,
      subjects,
      timeoutMs: config.api.mcp_refresh_wait_ms,
    });
    const facade = createFacade({
      upstream,
      store,
      client: deps.client,
      artifacts: deps.artifacts,
      calls,
      tools,
      searchThreshold: config.api.mcp_search_threshold,
      decider,
      maxArgumentsDepth: config.tools.max_arguments_depth,
    });
    // What the project's MCP servers notify, for its sessions and listen streams.
    const notices = createUpstreamNotices({ nc, subjects, logger: log });
    app.addHook('onClose', () => notices.close());
    const modern = createModernHandlers({
      notices,
      facade,
      store,
      client: deps.client,
      calls,
      nc,
      logger: log,
      registryChanged: (project) => subjects.registryChanged(project),
      taskTtlMs: config.api.mcp_task_ttl_ms,
      readResource: (project, uri) => readArtifact(deps, project, uri),
      decider,
      upstream,
      inputStates: createInputStates(config.secrets.key, log),
      answers: createInputAnswers({
        store,
        nc,
        client: deps.client,
        logger: log,
        show: inputRequestOut,
      }),
    });
    app.addHook('onClose', () => modern.close());

    /** SEP-2243: a 2026-07-28 tools/call whose Mcp-Param headers disagree with its body. */
    async function paramHeadersOf(body: unknown, web: Request, scope: FacadeScope) {
      const msg = body as { id?: unknown; method?: unknown; params?: Record<string, unknown> };
      if (msg?.method !== 'tools/call' || typeof msg.params?.['name'] !== 'string') return;
      const tool = await facade.resolveTool(scope, msg.params['name']);
      if (!tool) return;
      const bad = paramHeaderMismatch(tool.parameters, msg.params['arguments'], web.headers);
      if (!bad) return;
      return {
        jsonrpc: '2.0',
        id: msg.id ?? null,
        error: {
          code: HEADER_MISMATCH,
          message: `Bad Request: the request headers and body disagree: ${bad.message}`,
          data: { mismatch: { header: bad.header } },
        },
      };
    }
    const { mcp_sse_retry_ms: retryMs } = config.api;
    const sessions = createSessions({ facade, store, nc, subjects, notices, config, logger: log });
    app.addHook('onClose', () => sessions.close());
    const mcpAuth = createMcpAuth(config.mcp_oauth, auth);
    const hostGuard = createHostGuard(
      {
        host: config.api.host,
        port: config.api.port,
        allowedHosts: config.api.allowed_hosts,
        allowedOrigins: config.api.allowed_origins,
        publicUrl: config.mcp_oauth.resource_base_url,
      },
      log,
    );

    /** One request to the project's facade, or (mcpServer) to one MCP server's own endpoint. */
    async function serve(
      req: FastifyRequest<{ Body: unknown }>,
      reply: FastifyReply,
      project: string,
      mcpServer: string | undefined,
      agent: string | undefined,
    ) {
      const web = toWebRequest(req);
      if (req.method === 'POST' && req.headers['mcp-session-id'] === undefined) {
        if (!(await isLegacyRequest(web, req.body))) {
          // 2026-07-28: stateless, one server per request (modern.ts). A listen is the one
          // request that stays open: counted as an event stream.
          if ((req.body as { method?: unknown } | undefined)?.method === 'subscriptions/listen') {
            holdStream(streams, project, reply);
            // The resources it names are subscribed to on their servers while it is open.
            const uris = listenedResources(req.body);
            if (uris.length > MAX_LISTENED_RESOURCES) {
              return reply
                .status(400)
                .send(
                  rpcError(
                    -32602,
                    `a listen names at most ${MAX_LISTENED_RESOURCES} resources (${uris.length} given)`,
                  ),
                );
            }
            if (uris.length > 0) {
              const end = facade.watches.listen(project, mcpServer, uris);
              reply.raw.once('close', end);
            }
          }
          const mismatch = await paramHeadersOf(req.body, web, {
            project,
            agent,
            server: mcpServer,
          });
          if (mismatch) {
            // As the SDK answers its own header checks: a JSON-RPC body, not an api error.
            return sendWebResponse(reply, Response.json(mismatch, { status: 400 }));
          }
          const res = await modern.for(project, mcpServer).fetch(web, {
            parsedBody: req.body,
            authInfo: {
              token: '',
              clientId: project,
              scopes: [],
              extra: { project, agent, caller: mcpCallerOf(req), server: mcpServer },
            },
          });
          return sendWebResponse(reply, res);
        }
      }
      const sessionId = sessionIdOf(req);
      let transport: WebStandardStreamableHTTPServerTransport;
      let fresh: OpenedSession | undefined;
      let priming: string | undefined;
      if (sessionId) {
        const s = sessions.get(sessionId);
        if (!s || s.project !== project || s.server !== mcpServer) {
          return reply.status(404).send(rpcError(-32001, 'Session not found'));
        }
        s.lastSeen = Date.now();
        transport = s.transport;
        // A GET is the session's notification stream: counted as an event stream.
        if (req.method === 'GET') holdStream(streams, project, reply);
        // The GET stream's priming event, placed before the SDK opens the stream so that
        // nothing it sends there can come before it in the store.
        if (req.method === 'GET' && !req.headers['last-event-id'] && primes(req)) {
          priming = s.events.prime(GET_STREAM);
        }
      } else if (req.method === 'POST' && isInitializeRequest(req.body)) {
        fresh = await sessions.open(project, mcpServer, agent, mcpCallerOf(req));
        transport = fresh.transport;
      } else {
        return reply
          .status(400)
          .send(rpcError(-32000, 'Bad Request: no valid Mcp-Session-Id; send initialize first'));
      }
      let res: Response;
      try {
        res = await transport.handleRequest(web, { parsedBody: req.body });
      } finally {
        // An initialize the SDK refused opened no session: nothing else will close its
        // server or give its place back.
        if (fresh && !fresh.opened()) {
          fresh.release();
          await fresh.server.close().catch(() => undefined);
        }
      }
      await sendWebResponse(
        reply,
        priming !== undefined && isEventStream(res) ? withPrimingEvent(res, priming, retryMs) : res,
      );
    }

    app.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/projects/:project/mcp',
      // Host and Origin first: a refused page's requests are not failed authentications.
      onRequest: [hostGuard, mcpAuth.authenticate],
      schema: {
        tags: ['mcp'],
        summary: 'The project as an MCP server (streamable HTTP)',
        description:
          "JSON-RPC per the Model Context Protocol. Revisions 2025-03-26 to 2025-11-25: POST messages, GET the session's notification stream, DELETE to end a session. Revision 2026-07-28: stateless POSTs (server/discover, subscriptions/listen as an SSE stream, the io.modelcontextprotocol/tasks extension's tasks/get, tasks/update and tasks/cancel). Tools are the project's enabled tools; `?agent=` limits them to that agent's tool set. See docs/mcp.md, \"The mesh as an MCP server\".",
        params: ProjectParams,
        querystring: z.object({ agent: Id.optional() }),
        response: {
          200: z.unknown().describe('a JSON-RPC response, or a text/event-stream of messages'),
          ...errors,
        },
      },
      handler: (req, reply) => serve(req, reply, req.params.project, undefined, req.query.agent),
    });

    app.route({
      method: ['GET', 'POST', 'DELETE'],
      url: '/projects/:project/mcp-servers/:name/mcp',
      onRequest: [hostGuard, mcpAuth.authenticate],
      schema: {
        tags: ['mcp'],
        summary: 'One MCP server of the project, served through the mesh under its own names',
        description:
          'The same protocol, revisions, auth, sessions and Tasks as /projects/:project/mcp, for one registered MCP server: its tools under the names the server gives them (`echo`, not `server__echo`), their input schemas as the server sent them. Each call still travels over the bus and leaves one card. 404 for a server the project has not registered. See docs/protocol.md, section 21.',
        params: ProjectParams.extend({ name: Id }),
        querystring: z.object({ agent: Id.optional() }),
        response: {
          200: z.unknown().describe('a JSON-RPC response, or a text/event-stream of messages'),
          ...errors,
        },
      },
      handler: async (req, reply) => {
        const { project, name } = req.params;
        // A live session of this server was opened after this check: its requests (every call
        // of a 2025 client) skip the lookup. Any other request looks the server up.
        const live = sessions.get(sessionIdOf(req) ?? '');
        const opened = live?.project === project && live.server === name;
        if (!opened && !(await store.mcpServers.get(project, name))) {
          throw notFound('MCP server', name);
        }
        return serve(req, reply, project, name, req.query.agent);
      },
    });
  };

/** RFC 9728 Protected Resource Metadata of each project's facade (no prefix, no auth). */
export const mcpMetadataRoutes =
  (deps: Omit<RouteDeps, 'store'>): FastifyPluginAsyncZod =>
  async (app) => {
    const mcpAuth = createMcpAuth(deps.config.mcp_oauth, deps.auth);
    app.get(
      '/.well-known/oauth-protected-resource/v1/projects/:project/mcp',
      {
        schema: {
          tags: ['mcp'],
          summary: "OAuth Protected Resource Metadata of a project's MCP endpoint (RFC 9728)",
          description: '404 unless [mcp_oauth] names an issuer.',
          params: ProjectParams,
          response: {
            200: z.object({
              resource: z.string(),
              authorization_servers: z.array(z.string()),
              scopes_supported: z.array(z.string()),
              bearer_methods_supported: z.array(z.string()),
            }),
            404: ErrorResponse,
          },
        },
      },
      async (req) => {
        const metadata = mcpAuth.metadata(req.params.project);
        if (!metadata) throw new ApiError('not_found', 'OAuth is not configured');
        return metadata;
      },
    );
  };
