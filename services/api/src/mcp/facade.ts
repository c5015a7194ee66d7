// The MCP facade: one translation module from MCP to the mesh, behind both transports (the
// api's streamable HTTP route and, through it, `toolmesh mcp serve` on stdio). A facade server
// is built per session for one project (and optionally one agent): `tools/list` is the
// project's enabled tools, or the agent's tool set as its worker sees it; `tools/call` is a tool
// call on the bus, answered from its card (calls.ts). Built on the 1.x SDK's low-level Server:
// the tools are registry rows with JSON Schemas, not zod shapes known at compile time.
import { Server } from '@modelcontextprotocol/sdk/server/index.js';
import {
  CallToolRequestSchema,
  CreateMessageResultSchema,
  ElicitResultSchema,
  ErrorCode,
  GetPromptRequestSchema,
  ListPromptsRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListResourcesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type CreateTaskResult,
  type ElicitRequest,
  type ProgressNotification,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { ArtifactStore } from '@toolmesh/artifacts';
import { LONG_RUNNING_TOOLS } from '@toolmesh/skills';
import type { Client } from '@toolmesh/client';
import type { McpAskMethod, McpCallEnvelope, ToolProgressEvent } from '@toolmesh/protocol';
import type {
  AgentsStore,
  CallsStore,
  RegistryStore,
  SkillsStore,
  ToolRecord,
} from '@toolmesh/store';
import { ApiError } from '../errors.ts';
import { createArgumentsChecker } from '../routes/executions-args.ts';
import {
  DETACHED,
  IDEMPOTENCY_META_KEY,
  errorResult,
  NoClientToAsk,
  type CallerAsk,
  type MeshCalls,
} from './calls.ts';
import { buildNameTable, mcpToolName, type NameTable } from './names.ts';
import { readArtifact } from './resources.ts';
import type { ToolCache } from './tool-cache.ts';
import { CALL_TOOL, SEARCH_TOOLS, search, searchTools } from './search.ts';
import { TASK_POLL_INTERVAL_MS, createProjectTaskStore, toTask } from './tasks.ts';
import type { ApprovalDecider } from '../approvals.ts';
import {
  FEDERATED_CAPABILITIES,
  PASSTHROUGH_CAPABILITIES,
  registerPassthrough,
} from './passthrough.ts';
import { logPasses, noticeFor } from './notices.ts';
import { createSessionWatch, createWatches, type SessionWatch } from './watch.ts';
import type { Upstream } from './upstream.ts';
import { createFederation } from './federated.ts';
import {
  applyAnswer,
  approvalElicitation,
  type ElicitAnswer,
  type ElicitParams,
} from './approval-input.ts';

export const FACADE_NAME = 'toolmesh';
export const FACADE_VERSION = '1.0.0';

export interface FacadeScope {
  project: string;
  /** Limits the tools to this agent's tool set. */
  agent?: string | undefined;
  /** Who answers for this client when it decides an approval (`mcp:<key id>`). */
  caller?: string | undefined;
  /**
   * One MCP server of the project (its own endpoint): only its tools, under the names the
   * server gives them.
   */
  server?: string | undefined;
}

/** The spec of an MCP tool, when the row is one (server, the upstream's name, `$schema`). */
function mcpSpecOf(t: ToolRecord): { server: string; tool: string; schema?: string } | undefined {
  if (t.origin !== 'mcp') return undefined;
  const { server, tool, schema } = t.spec as { server?: unknown; tool?: unknown; schema?: unknown };
  if (typeof server !== 'string' || typeof tool !== 'string') return undefined;
  return { server, tool, ...(typeof schema === 'string' ? { schema } : {}) };
}

/** The tools of one MCP server under the server's own names (they are unique on the server). */
function serverNameTable(tools: readonly ToolRecord[], server: string): NameTable<ToolRecord> {
  const byName = new Map<string, ToolRecord>();
  const entries: { mcpName: string; tool: ToolRecord }[] = [];
  for (const tool of tools) {
    const spec = mcpSpecOf(tool);
    if (spec?.server !== server || byName.has(spec.tool)) continue;
    byName.set(spec.tool, tool);
    entries.push({ mcpName: spec.tool, tool });
  }
  return { entries, resolve: (n) => byName.get(n) };
}

/** A call that waits for an approval, its wait detached (handleCall's `park`). */
export interface Parked {
  /** Waiting for an approval, or for an input request of its MCP server (modern-elicit.ts). */
  parked:
    | { approvalId: string; toolCallId: string; tool: ToolRecord }
    | { inputRequestId: string; toolCallId: string; tool: ToolRecord };
}

/**
 * A call its MCP server made a task (or that waits for an approval), its wait detached
 * (handleCall's `taskOnServer`): the mesh answers it with its own task.
 */
export interface BecameTask {
  becameTask: string;
}
/** The progress status of a call its MCP server made a task (services/tools mcp-task.ts). */
const MCP_TASK_STATUS = 'mcp_task';

/** Does a profile's `allowed_tools` (a name, or `<target>.*`) admit a tool? As the agent worker. */
function allows(patterns: readonly string[], name: string): boolean {
  return patterns.some((p) =>
    p.endsWith('.*') ? name.startsWith(p.slice(0, -1)) && name.length > p.length - 1 : p === name,
  );
}

/** Past this registered timeout a call outlives most MCP clients' default request timeout. */
const LONG_TIMEOUT_MS = 60_000;

/**
 * Task support: every call is a durable mesh call (its card answers any instance), so every tool
 * may run as a task, and every tool says `optional`. None is `required`, which would lock out
 * clients without Tasks (2025-06-18 and older, most clients today); none is `forbidden`, which
 * would take a durable, re-readable result from clients that ask for one. The long-running
 * skills tools and any tool registered with a timeout over 60 s are where a client should use a
 * task; they are marked in `_meta["io.toolmesh/long-running"]`.
 */
const TASK_SUPPORT = 'optional';

/** Does a call of this tool run longer than a client's default request timeout? */
export function isLongRunning(t: ToolRecord): boolean {
  const timeout = (t.options as { timeout_ms?: unknown }).timeout_ms;
  return (
    LONG_RUNNING_TOOLS.has(t.name) || (typeof timeout === 'number' && timeout > LONG_TIMEOUT_MS)
  );
}

export class UnknownAgentError extends Error {
  readonly code = 'not_found';
  constructor(agent: string) {
    super(`agent ${JSON.stringify(agent)} not found`);
    this.name = 'UnknownAgentError';
  }
}

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
  const { store, client, artifacts, calls, tools, searchThreshold, decider } = deps;
  const federation = createFederation({ store, upstream: deps.upstream });
  const watches = createWatches({ store, upstream: deps.upstream, federation });

  /**
   * Asks the client to decide a call that waits for approval (elicitation). A failure to ask, or
   * no answer, leaves the approval to the api, the CLI or the console.
   */
  async function askApproval(
    scope: FacadeScope,
    approvalId: string,
    elicit: (p: ElicitParams, timeoutMs: number) => Promise<ElicitAnswer>,
  ): Promise<void> {
    const a = await store.approvals.get(scope.project, approvalId);
    if (a?.status !== 'pending') return;
    const answer = await elicit(
      approvalElicitation(a),
      Math.max(1_000, a.expires_at.getTime() - Date.now()),
    );
    await applyAnswer(decider, a, scope.caller ?? 'mcp', answer);
  }
  const checker = createArgumentsChecker({ maxDepth: deps.maxArgumentsDepth });

  /**
   * The tools a scope may see. For an agent, the same rule as the agent worker's toolset
   * (services/agent-worker/src/toolset.ts): enabled tools its profile admits and, when tools
   * are attached to it, only those; an agent without a profile sees none.
   */
  async function visibleTools(scope: FacadeScope): Promise<NameTable<ToolRecord>> {
    const all = (await store.tools.list(scope.project, {})).filter((t) => t.enabled);
    const table = (tools: ToolRecord[]) =>
      scope.server === undefined ? buildNameTable(tools) : serverNameTable(tools, scope.server);
    if (scope.agent === undefined) return table(all);
    const agent = await store.agents.get(scope.project, scope.agent);
    if (!agent) throw new UnknownAgentError(scope.agent);
    const profile = agent.profile
      ? await store.profiles.get(scope.project, agent.profile)
      : undefined;
    const attached = new Set(
      ((await store.agents.listTools(scope.project, scope.agent)) ?? []).map((t) => t.name),
    );
    const allowed = profile?.allowed_tools ?? [];
    return table(
      all.filter((t) => allows(allowed, t.name) && (attached.size === 0 || attached.has(t.name))),
    );
  }

  function toMcpTool(mcpName: string, t: ToolRecord): Tool {
    // The input schema as the server sent it: the registry keeps its `$schema` in the spec.
    const dialect = mcpSpecOf(t)?.schema;
    return {
      name: mcpName,
      title: t.name,
      description: t.description,
      inputSchema: (dialect
        ? { $schema: dialect, ...t.parameters }
        : t.parameters) as Tool['inputSchema'],
      ...(t.output_schema ? { outputSchema: t.output_schema as Tool['outputSchema'] } : {}),
      ...(Object.keys(t.annotations).length > 0 ? { annotations: t.annotations } : {}),
      execution: { taskSupport: TASK_SUPPORT },
      _meta: {
        'io.toolmesh/tool': t.name,
        ...(isLongRunning(t) ? { 'io.toolmesh/long-running': true } : {}),
      },
    };
  }

  /**
   * tools/call of a scope, whichever SDK line carries it: a tool call on the mesh (or a task of
   * one, or the search tools' answer).
   */
  async function handleCall(
    scope: FacadeScope,
    params: CallToolRequest['params'],
    extra: {
      signal: AbortSignal;
      sendNotification: (n: ProgressNotification) => Promise<void>;
      /**
       * Notifies the client outside this request (a 2025 session's stream): a task's progress
       * after its request was answered. Without it a task sends no progress.
       */
      notifyLater?: ((n: ProgressNotification) => Promise<void>) | undefined;
      /** Present when the client declared elicitation: asks it to decide an approval. */
      elicit?: ((p: ElicitParams, timeoutMs: number) => Promise<ElicitAnswer>) | undefined;
      /**
       * Stop waiting once the call waits for an approval (or an input request), and answer `{parked}` instead (the
       * call goes on; a 2026-07-28 request asks its client with an input_required result).
       */
      park?: boolean | undefined;
      /**
       * A 2026-07-28 client with Tasks on a server's own endpoint: the server decides whether
       * the call is a task. Stop waiting once it made one (or once the call waits for an
       * approval) and answer `{becameTask}`; the call goes on.
       */
      taskOnServer?: boolean | undefined;
      /** Asks this client what the call's MCP server asks (a 2025 session's stream). */
      ask?: CallerAsk | undefined;
      /** The client's log level: the MCP server's log messages during the call at or above it
       * are passed on; none without one. */
      logLevel?: string | undefined;
      /** A 2026-07-28 client's envelope, for the MCP server (modern-input.ts). */
      mcp?: McpCallEnvelope | undefined;
    },
  ): Promise<CallToolResult | CreateTaskResult | Parked | BecameTask> {
    let name = params.name;
    let args = params.arguments ?? {};
    const searching = name === SEARCH_TOOLS || name === CALL_TOOL;
    const table = searching ? await visible(scope) : undefined;
    if (table && table.entries.length > searchThreshold) {
      if (name === SEARCH_TOOLS) {
        const { query, limit } = args;
        if (typeof query !== 'string' || query.trim() === '') {
          throw new McpError(ErrorCode.InvalidParams, 'search_tools needs a query');
        }
        const found = search(table, query, typeof limit === 'number' ? limit : undefined);
        const tools = found.map((e) => toMcpTool(e.mcpName, e.tool));
        return {
          content: [{ type: 'text', text: JSON.stringify(tools) }],
          structuredContent: { tools },
        };
      }
      if (name === CALL_TOOL) {
        const inner = args['arguments'] ?? {};
        if (typeof args['name'] !== 'string' || typeof inner !== 'object' || inner === null) {
          throw new McpError(
            ErrorCode.InvalidParams,
            'call_tool needs a name (a string) and arguments (an object)',
          );
        }
        name = args['name'];
        args = inner as Record<string, unknown>;
      }
    }
    const tool = await resolve(scope, name, table);
    if (!tool) {
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}`);
    }
    let issues;
    try {
      issues = checker.check(tool, args);
    } catch (err) {
      if (err instanceof ApiError)
        return errorResult(err.code, err.message, { details: err.details });
      throw err;
    }
    if (issues) {
      const first = issues[0];
      return errorResult(
        'invalid_arguments',
        `invalid arguments for ${tool.name}: ${first ? `${first.path}: ${first.message}` : 'schema mismatch'}`,
        { issues },
      );
    }
    const meta = params._meta;
    const key = meta?.[IDEMPOTENCY_META_KEY];
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > 255)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `_meta["${IDEMPOTENCY_META_KEY}"] must be a string of 1-255 characters`,
      );
    }
    const traceparent = meta?.['traceparent'];
    const progressToken = meta?.progressToken;
    const task = params.task;
    // The MCP server's log messages during the call, at or above the client's level.
    const logLevel = extra.logLevel;
    const logs = logLevel !== undefined;
    const callServer = mcpSpecOf(tool)?.server;
    /** The call's progress events as notifications/progress on `send`, counted up. */
    const progressTo = (send: ((n: ProgressNotification) => Promise<void>) | undefined) => {
      if ((progressToken === undefined && !logs) || !send) return undefined;
      let progress = 0;
      return (ev: ToolProgressEvent) => {
        const log = ev.detail?.['mcp_log'];
        if (typeof log === 'object' && log !== null) {
          const params = log as Record<string, unknown>;
          if (logs && callServer !== undefined && logPasses(params['level'], logLevel)) {
            const n = noticeFor(scope.server, callServer, {
              v: 1,
              method: 'notifications/message',
              params,
            });
            if (n) {
              const out = { method: n.method, params: n.params };
              send(out as unknown as ProgressNotification).catch(() => undefined);
            }
          }
          return;
        }
        if (progressToken === undefined) return;
        // An MCP server's own progress (the tool service passes on its numbers): as it sent it.
        const own = ev.detail?.['progress'];
        if (typeof own === 'number') {
          const { total, message } = ev.detail ?? {};
          send({
            method: 'notifications/progress',
            params: {
              progressToken,
              progress: own,
              ...(typeof total === 'number' ? { total } : {}),
              ...(typeof message === 'string' ? { message } : {}),
            },
          }).catch(() => undefined);
          return;
        }
        // Our own count keeps progress increasing whatever the tool reports; a message the tool
        // gave (a watch's) is passed on, else the detail.
        progress += 1;
        const said = ev.detail?.['message'];
        const detail =
          typeof said === 'string' ? said : ev.detail ? JSON.stringify(ev.detail) : undefined;
        send({
          method: 'notifications/progress',
          params: { progressToken, progress, ...(detail ? { message: detail } : {}) },
        }).catch(() => undefined);
      };
    };
    if (task) {
      // A task: recorded before the call is published and before it is returned; its id is
      // the tool_call_id, so any instance answers tasks/get, tasks/result and tasks/cancel.
      const ttlMs = task.ttl ?? null;
      const started = await calls.start(
        {
          project: scope.project,
          tool,
          arguments: args,
          idempotencyKey: key,
          traceparent: typeof traceparent === 'string' ? traceparent : undefined,
          onProgress: progressTo(extra.notifyLater),
        },
        async (id) => {
          await store.mcpTasks.create({
            projectId: scope.project,
            taskId: id,
            ttlMs,
            pollIntervalMs: TASK_POLL_INTERVAL_MS,
          });
        },
      );
      if (started.refused) {
        const error = started.refused.structuredContent?.['error'] as { message?: string };
        throw new McpError(ErrorCode.InvalidParams, error.message ?? 'the task was refused');
      }
      const row = await store.mcpTasks.get(scope.project, started.id);
      if (!row) throw new McpError(ErrorCode.InternalError, 'the task expired at once');
      return { task: toTask(row) };
    }
    let onProgress = progressTo(extra.sendNotification);
    const elicit = extra.elicit;
    if (elicit) {
      // The call's progress event says when it starts waiting for a person: ask this client.
      const forward = onProgress;
      const asked = new Set<string>();
      onProgress = (ev) => {
        const id = ev.detail?.['approval_id'];
        if (ev.detail?.['status'] === 'awaiting_approval' && typeof id === 'string') {
          if (!asked.has(id)) {
            asked.add(id);
            askApproval(scope, id, elicit).catch(() => undefined);
          }
        }
        forward?.(ev);
      };
    }
    let parked: Parked['parked'] | undefined;
    let becameTask: string | undefined;
    const detach = extra.park || extra.taskOnServer ? new AbortController() : undefined;
    if (detach) {
      const forward = onProgress;
      onProgress = (ev) => {
        const id = ev.detail?.['approval_id'];
        const input = ev.detail?.['input_request_id'];
        const status = ev.detail?.['status'];
        if (extra.taskOnServer) {
          // A client that speaks Tasks gets one whatever the call waits for: its server's task,
          // an approval, or an input request (tasks/get shows it as input_required).
          if (
            !becameTask &&
            (status === MCP_TASK_STATUS ||
              status === 'awaiting_approval' ||
              status === 'awaiting_input')
          ) {
            becameTask = ev.tool_call_id;
            detach.abort();
          }
        } else if (!parked && status === 'awaiting_approval' && typeof id === 'string') {
          parked = { approvalId: id, toolCallId: ev.tool_call_id, tool };
          detach.abort();
        } else if (!parked && status === 'awaiting_input' && typeof input === 'string') {
          parked = { inputRequestId: input, toolCallId: ev.tool_call_id, tool };
          detach.abort();
        }
        forward?.(ev);
      };
    }
    const result = await calls.run({
      project: scope.project,
      tool,
      arguments: args,
      idempotencyKey: key,
      traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      signal: extra.signal,
      detach: detach?.signal,
      onProgress,
      ask: extra.ask,
      mcp: extra.mcp,
    });
    if (result === DETACHED && becameTask) return { becameTask };
    return result === DETACHED && parked ? { parked } : result;
  }

  /** tools/list of a scope. */
  async function handleList(scope: FacadeScope): Promise<{ tools: Tool[] }> {
    const table = await visible(scope);
    if (table.entries.length > searchThreshold) return { tools: searchTools };
    return { tools: table.entries.map((e) => toMcpTool(e.mcpName, e.tool)) };
  }

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

    server.setRequestHandler(ListToolsRequestSchema, () => handleList(scope));

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

  /**
   * The tool an MCP name stands for, if the scope may see it. Without an agent, a plain name
   * (`target__tool`) is looked up directly, one row instead of the project's list, and accepted
   * only if the tool's own MCP name is that name (plain names map one to one); every other name
   * goes through the table. The direct lookup is cached (tool-cache.ts): it is on the path of
   * every call, and the registry changes rarely.
   */
  async function resolve(
    scope: FacadeScope,
    name: string,
    table?: NameTable<ToolRecord>,
  ): Promise<ToolRecord | undefined> {
    if (!table && scope.agent === undefined && scope.server !== undefined) {
      // The registry name of a server's tool is `<server>.<name>` whenever its name is an id.
      const t = await tools.get(scope.project, `${scope.server}.${name}`);
      const spec = t && mcpSpecOf(t);
      if (t?.enabled && spec?.server === scope.server && spec.tool === name) return t;
    } else if (!table && scope.agent === undefined) {
      const sep = name.indexOf('__');
      if (sep > 0) {
        const t = await tools.get(scope.project, `${name.slice(0, sep)}.${name.slice(sep + 2)}`);
        if (t?.enabled && mcpToolName(t.name) === name) return t;
      }
    }
    return (table ?? (await visible(scope))).resolve(name);
  }

  /** An unknown agent is the client's mistake: an invalid-params error, not an internal one. */
  async function visible(scope: FacadeScope): Promise<NameTable<ToolRecord>> {
    try {
      return await visibleTools(scope);
    } catch (err) {
      if (err instanceof UnknownAgentError)
        throw new McpError(ErrorCode.InvalidParams, err.message);
      throw err;
    }
  }

  /** The registry row a tools/call of a scope names (cached rows; param-headers.ts). */
  const resolveTool = (scope: FacadeScope, name: string) => resolve(scope, name);
  return { newServer, visibleTools, handleList, handleCall, federation, watches, resolveTool };
}
export type Facade = ReturnType<typeof createFacade>;
