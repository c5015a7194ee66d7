// The MCP facade: one translation module from MCP to the mesh, behind both transports (the
// api's streamable HTTP route and, through it, `toolmesh mcp serve` on stdio). A facade server
// is built per session for one project (and optionally one agent, or one MCP server under its
// own names): `tools/list` is what the scope sees (facade-tools.ts); `tools/call` is a tool call
// on the bus, answered from its card (facade-call.ts, calls.ts). This module builds the 2025-era
// session server on the 1.x SDK's low-level Server (the tools are registry rows with JSON
// Schemas, not zod shapes known at compile time); modern.ts serves 2026-07-28 from the same parts.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  type CallToolResult,
  type ElicitRequest,
} from '@modelcontextprotocol/sdk/types.js';
import type { ArtifactStore } from '@toolmesh/artifacts';
import type { Client } from '@toolmesh/client';
import type { McpAskMethod } from '@toolmesh/protocol';
import type { AgentsStore, CallsStore, RegistryStore, SkillsStore } from '@toolmesh/store';
import type { ApprovalDecider } from '../approvals.ts';
import { NoClientToAsk } from './call-asks.ts';
import { IDEMPOTENCY_META_KEY, type MeshCalls } from './calls.ts';
import { createCallHandler } from './facade-call.ts';
import { createToolView, type FacadeScope } from './facade-tools.ts';
import { createFederation } from './federated.ts';
import {
  FEDERATED_CAPABILITIES,
  PASSTHROUGH_CAPABILITIES,
  registerPassthrough,
} from './passthrough.ts';
import { readArtifact } from './resources.ts';
import type { ToolCache } from './tool-cache.ts';
import { createProjectTaskStore } from './tasks.ts';
import type { Upstream } from './upstream.ts';
import { createSessionWatch, createWatches, type SessionWatch } from './watch.ts';

export const FACADE_NAME = 'toolmesh';
export const FACADE_VERSION = '1.0.0';

export function createFacade(deps: {
  store: CallsStore & RegistryStore & SkillsStore & AgentsStore;
  client: Client;
  artifacts: ArtifactStore;
  calls: MeshCalls;
  /** Registry rows by name, for the direct lookup of a call's tool. */
  tools: ToolCache;
  /** More visible tools than this: tools/list offers search_tools and call_tool only. */
  searchThreshold: number;
  decider: ApprovalDecider;
  /** tools.max_arguments_depth. */
  maxArgumentsDepth: number;
  /** An MCP server's other methods (a server's own endpoint). */
  upstream: Upstream;
}) {
  const { store, client, artifacts, calls, searchThreshold } = deps;
  const federation = createFederation({ store, upstream: deps.upstream });
  const watches = createWatches({ store, upstream: deps.upstream, federation });
  const view = createToolView({ store, tools: deps.tools, searchThreshold });
  const handleCall = createCallHandler({
    store,
    calls,
    view,
    searchThreshold,
    decider: deps.decider,
    maxArgumentsDepth: deps.maxArgumentsDepth,
  });

  /**
   * An SDK server for one scope; the transport is connected by the caller. `watch` keeps what
   * the session asked to be notified of (its resources, its log level).
   */
  function newServer(scope: FacadeScope, watch: SessionWatch = createSessionWatch()): Server {
    const server = new Server(
      { name: FACADE_NAME, version: FACADE_VERSION },
      {
        capabilities: {
          tools: { listChanged: true },
          tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } },
          // Artifacts are reached through the resource links of results, not listed.
          ...(scope.server === undefined ? FEDERATED_CAPABILITIES : PASSTHROUGH_CAPABILITIES),
        },
        taskStore: createProjectTaskStore({ store, client, calls, project: scope.project }),
        instructions:
          'Tools of a toolmesh project. Each call runs on the mesh and is recorded as an execution; ' +
          `set _meta["${IDEMPOTENCY_META_KEY}"] to make a re-sent call the same call.`,
      },
    );

    server.setRequestHandler(ListToolsRequestSchema, () => view.list(scope));

    if (scope.server === undefined) {
      // The project's MCP servers' prompts and resources, under prefixed names (federated.ts).
      const fed = federation;
      server.setRequestHandler(ListResourcesRequestSchema, () => fed.listResources(scope.project));
      server.setRequestHandler(ListResourceTemplatesRequestSchema, () =>
        fed.listTemplates(scope.project),
      );
      server.setRequestHandler(ReadResourceRequestSchema, (req) =>
        fed.isFederatedUri(req.params.uri)
          ? (fed.readResource(scope.project, req.params.uri) as Promise<never>)
          : readArtifact({ store, artifacts }, scope.project, req.params.uri),
      );
      server.setRequestHandler(ListPromptsRequestSchema, () => fed.listPrompts(scope.project));
      server.setRequestHandler(
        GetPromptRequestSchema,
        (req) => fed.getPrompt(scope.project, req.params) as Promise<never>,
      );
    } else {
      registerPassthrough(
        server,
        { project: scope.project, server: scope.server },
        deps.upstream,
        (uri) => readArtifact({ store, artifacts }, scope.project, uri),
      );
    }
    watches.register(server, scope.project, scope.server, watch);

    // No `park` on a 2025 session: its client is asked by elicitation while the call waits.
    server.setRequestHandler(CallToolRequestSchema, (req, extra) =>
      (handleCall as (...a: Parameters<typeof handleCall>) => Promise<CallToolResult>)(
        scope,
        req.params,
        {
          ...extra,
          logLevel: watch.level,
          // Outside the request: the session's standalone stream (GET), which the client keeps.
          notifyLater: (n) => server.notification(n),
          // What the call's MCP server asks goes to this client, on this request's stream. A
          // client that declared neither capability could only refuse: without `ask` the call
          // takes no subscription for it, and the tools service, finding no one to ask, does what
          // a refusal makes it do (services/tools/src/mcp/ask.ts).
          ask: canBeAsked(server)
            ? (method, params, signal) =>
                askClient(server, extra.sendRequest, method, params, signal)
            : undefined,
          // Only a client that declared elicitation is asked to approve (on this request's stream).
          elicit: server.getClientCapabilities()?.elicitation
            ? (params, timeoutMs) =>
                extra.sendRequest(
                  // The form is plain JSON Schema; the SDK types each property kind apart.
                  {
                    method: 'elicitation/create',
                    params: params as unknown as ElicitRequest['params'],
                  },
                  ElicitResultSchema,
                  { timeout: timeoutMs },
                )
            : undefined,
        },
      ),
    );
    return server;
  }

  /** Did the session's client declare anything an MCP server may ask it (sampling, elicitation)? */
  function canBeAsked(server: Server): boolean {
    const caps = server.getClientCapabilities();
    return Boolean(caps?.sampling || caps?.elicitation);
  }

  /**
   * Sends what an MCP server asks to this session's client, if it declared that capability;
   * else refuses, as the server would be refused by a client without it.
   */
  function askClient(
    server: Server,
    sendRequest: (
      r: { method: string; params: Record<string, unknown> },
      schema: typeof CreateMessageResultSchema | typeof ElicitResultSchema,
      o: { signal: AbortSignal },
    ) => Promise<unknown>,
    method: McpAskMethod,
    params: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> {
    const caps = server.getClientCapabilities();
    const sampling = method === 'sampling/createMessage';
    if (sampling ? !caps?.sampling : !caps?.elicitation) {
      throw new NoClientToAsk(
        `the MCP client did not declare ${sampling ? 'sampling' : 'elicitation'}`,
      );
    }
    return sendRequest(
      { method, params },
      sampling ? CreateMessageResultSchema : ElicitResultSchema,
      { signal },
    ) as Promise<Record<string, unknown>>;
  }

  /** The registry row a tools/call of a scope names (cached rows; param-headers.ts). */
  const resolveTool = (scope: FacadeScope, name: string) => view.resolve(scope, name);
  return {
    newServer,
    visibleTools: view.visibleTools,
    handleList: view.list,
    handleCall,
    federation,
    watches,
    resolveTool,
  };
}
export type Facade = ReturnType<typeof createFacade>;
