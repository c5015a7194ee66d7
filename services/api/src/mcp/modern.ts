// The 2026-07-28 revision of the facade (stateless requests, `server/discover`, list results with
// `ttlMs`/`cacheScope`, list changes on `subscriptions/listen`, Tasks as the
// `io.modelcontextprotocol/tasks` extension), served with the 2.x SDK
// (`@modelcontextprotocol/server`): its createMcpHandler builds a server per request from the
// factory below, with the same handlers as the 1.x sessions (facade.ts). 2025-era requests never
// reach it: the route tells them apart with the SDK's isLegacyRequest and keeps them on the 1.x
// sessions, so the 2025 revisions keep initialize, sessions and list_changed.
//
// One handler per endpoint of a project (its facade, each MCP server's own): a handler's event
// bus feeds every `subscriptions/listen` stream open on it, so a project's registry change, and
// its MCP servers' resource updates and list changes (notices.ts), reach that project's
// listeners and no other's.
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  LOG_LEVEL_META_KEY,
  createMcpHandler,
  type McpHttpHandler,
  type McpRequestContext,
} from '@modelcontextprotocol/server';
import type { CreateTaskResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@toolmesh/client';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import type { MeshCalls } from './calls.ts';
import { INPUT_REQUIRED_KEY } from './call-results.ts';
import { IDEMPOTENCY_META_KEY, idempotentCallId } from './calls.ts';
import type { Facade } from './facade.ts';
import type { BecameTask, Parked } from './facade-call.ts';
import type { FacadeScope } from './facade-tools.ts';
import { FACADE_NAME, FACADE_VERSION } from './facade.ts';
import {
  TASKS_EXTENSION,
  createdTask,
  declaresTasks,
  recordServerTask,
  registerModernTasks,
} from './modern-tasks.ts';
import { declaresElicitation, parkedAnswer, resumeParked } from './modern-approval.ts';
import {
  envelopeOf,
  inputRequiredFor,
  openState,
  upstreamProtocolError,
  type InputBinding,
  type InputStates,
} from './modern-input.ts';
import type { readArtifact } from './resources.ts';
import type { ApprovalDecider } from '../approvals.ts';
import {
  FEDERATED_CAPABILITIES,
  PASSTHROUGH_CAPABILITIES,
  modernRequest,
  registerModernPassthrough,
} from './passthrough.ts';
import type { Upstream } from './upstream.ts';
import { noticeFor, type UpstreamNotices } from './notices.ts';
import { resumeWaiting, waitingAnswer } from './modern-elicit.ts';
import type { InputAnswers } from '../input-answers.ts';

/** A modern request's scope travels in the SDK's authInfo (the route authenticated it). */
export interface ModernScope extends FacadeScope {
  [key: string]: unknown;
}

/** Tool lists may be cached by the requesting client for a short while; registry edits are rare. */
const LIST_TTL_MS = 10_000;

export interface ModernDeps {
  facade: Facade;
  store: CallsStore & RegistryStore;
  client: Client;
  calls: MeshCalls;
  nc: NatsConnection;
  logger: Logger;
  /** The subject of a project's registry-changed event. */
  registryChanged: (project: string) => string;
  /** How long a task created on this revision stays readable. */
  taskTtlMs: number;
  readResource: (project: string, uri: string) => ReturnType<typeof readArtifact>;
  decider: ApprovalDecider;
  /** An MCP server's other methods (a server's own endpoint). */
  upstream: Upstream;
  /** What the project's MCP servers notify (resource updates, list changes). */
  notices: UpstreamNotices;
  /** Seals and checks the requestState of an MCP server's input requests. */
  inputStates: InputStates;
  /** Answers the mesh's input requests (a 2025-era server's questions, modern-elicit.ts). */
  answers: InputAnswers;
}

function createProjectHandler(
  deps: ModernDeps,
  project: string,
  endpoint: string | undefined,
): McpHttpHandler {
  const { facade } = deps;
  const factory = (ctx: McpRequestContext) => {
    const scope = ctx.authInfo?.extra as ModernScope | undefined;
    if (scope?.project !== project || scope.server !== endpoint) {
      throw new Error('a modern MCP request reached the facade without its scope');
    }
    const server = new Server(
      { name: FACADE_NAME, version: FACADE_VERSION },
      {
        capabilities: {
          tools: { listChanged: true },
          extensions: { [TASKS_EXTENSION]: {} },
          ...(scope.server === undefined ? FEDERATED_CAPABILITIES : PASSTHROUGH_CAPABILITIES),
        },
        cacheHints: { 'tools/list': { ttlMs: LIST_TTL_MS, cacheScope: 'private' } },
        instructions:
          'Tools of a toolmesh project. Each call runs on the mesh and is recorded as an execution; ' +
          `set _meta["${IDEMPOTENCY_META_KEY}"] to make a re-sent call the same call.`,
      },
    );
    // The two SDK lines type JSON Schemas apart; the values are the same registry JSON.
    server.setRequestHandler('tools/list', async () => (await facade.handleList(scope)) as never);
    server.setRequestHandler('tools/call', async (req, c) => {
      const state = c.mcpReq.requestState();
      const binding: InputBinding = {
        project,
        server: scope.server,
        method: 'tools/call',
        name: String(req.params.name),
      };
      // A re-sent request answering the MCP server's input requests: the server's own state
      // comes out of the mesh's seal (modern-input.ts), checked, and goes back to it.
      const opened = openState(deps.inputStates, state, binding);
      // A re-sent request answering a 2025-era server's question (modern-elicit.ts): answered,
      // and the same call waited for, never published again.
      if (opened !== 'foreign' && opened?.waiting) {
        return await resumeWaiting(
          deps,
          binding,
          opened.waiting,
          c.mcpReq.inputResponses,
          scope.caller ?? 'mcp',
          c.mcpReq.signal,
        );
      }
      // A re-sent request of a call that waited for its approval (modern-approval.ts): decided
      // by its answer and answered from that call's card, never published again.
      if (opened === 'foreign') {
        return await resumeParked(
          deps,
          scope,
          req.params,
          state as string,
          c.mcpReq.inputResponses,
          c.mcpReq.signal,
        );
      }
      // A task only when the request declares the extension; the server chooses its ttl. A
      // `task` field is the 2025-11 form and means nothing here. On a server's own endpoint the
      // server decides which call is a task (as the revision has it): the call goes to it with
      // the client's capabilities, and becomes the mesh's task if the server made it one.
      const tasks = declaresTasks(c.mcpReq.envelope, req.params);
      const onServer = tasks && scope.server !== undefined;
      const task = tasks && !onServer ? { ttl: deps.taskTtlMs } : undefined;
      // A keyed re-send of a call its server made a task: that task, not a wait for its end.
      const key = req.params._meta?.[IDEMPOTENCY_META_KEY];
      if (onServer && typeof key === 'string') {
        const row = await deps.store.mcpTasks.get(project, idempotentCallId(project, key));
        if (row) return createdTask(row) as never;
      }
      const result = await facade.handleCall(
        scope,
        { ...(req.params as Record<string, unknown>), task } as never,
        {
          signal: c.mcpReq.signal,
          sendNotification: (n) => c.mcpReq.notify(n),
          // The request's own log level (`_meta`); without one, no log messages (as the spec).
          logLevel: logLevelOf(c.mcpReq.envelope),
          // A client that answers elicitation is asked to decide an approval the call waits
          // for, with an input_required result; any other waits as before.
          park: !tasks && declaresElicitation(c.mcpReq.envelope),
          taskOnServer: onServer,
          mcp: envelopeOf(c.mcpReq, opened?.upstream, c.http?.req),
        },
      );
      if ('becameTask' in result) {
        const { becameTask } = result as BecameTask;
        return (await recordServerTask(deps.store, project, becameTask, deps.taskTtlMs)) as never;
      }
      if ('parked' in result) {
        const { parked } = result as Parked;
        if ('inputRequestId' in parked) {
          return await waitingAnswer(deps, binding, parked, c.mcpReq.signal);
        }
        return await parkedAnswer(deps, project, parked, c.mcpReq.signal);
      }
      const created = (result as Partial<CreateTaskResult>).task;
      if (task && created) {
        const row = await deps.store.mcpTasks.get(project, created.taskId);
        if (!row) {
          throw new ProtocolError(ProtocolErrorCode.InternalError, 'the task expired at once', {
            taskId: created.taskId,
          });
        }
        return createdTask(row) as never;
      }
      const asked = (result as Record<string, unknown>)[INPUT_REQUIRED_KEY];
      if (asked && typeof asked === 'object') {
        return inputRequiredFor(deps.inputStates, asked as Record<string, unknown>, binding);
      }
      const refused = upstreamProtocolError(result);
      if (refused) throw refused;
      return result as never;
    });
    registerModernTasks(server, { ...deps, project, caller: scope.caller ?? 'mcp' });
    if (scope.server === undefined) {
      // The project's MCP servers' prompts and resources, under prefixed names (federated.ts).
      const fed = facade.federation;
      server.setRequestHandler(
        'resources/list',
        async () => (await fed.listResources(project)) as never,
      );
      server.setRequestHandler(
        'resources/templates/list',
        async () => (await fed.listTemplates(project)) as never,
      );
      // A read and a prompt go to their server with the client's envelope, as on a server's
      // own endpoint; the state is bound to the prefixed name (no server of the facade).
      const scoped = { project, server: undefined };
      server.setRequestHandler('resources/read', async (req, c) =>
        fed.isFederatedUri(req.params.uri)
          ? ((await modernRequest(
              deps.upstream,
              deps.inputStates,
              scoped,
              'resources/read',
              req.params,
              c,
              (p, mcp) => fed.readResource(project, String(p['uri']), mcp),
            )) as never)
          : ((await deps.readResource(scope.project, req.params.uri)) as never),
      );
      server.setRequestHandler(
        'prompts/list',
        async () => (await fed.listPrompts(project)) as never,
      );
      server.setRequestHandler(
        'prompts/get',
        async (req, c) =>
          (await modernRequest(
            deps.upstream,
            deps.inputStates,
            scoped,
            'prompts/get',
            req.params,
            c,
            (p, mcp) => fed.getPrompt(project, p, mcp),
          )) as never,
      );
    } else {
      registerModernPassthrough(
        server,
        { project: scope.project, server: scope.server },
        deps.upstream,
        (uri) => deps.readResource(scope.project, uri),
        deps.inputStates,
      );
    }
    server.setRequestHandler(
      'logging/setLevel',
      async () => (await facade.watches.setLevel(project, scope.server)) as never,
    );
    return server;
  };
  return createMcpHandler(factory, { legacy: 'reject' });
}

/** `_meta["io.modelcontextprotocol/logLevel"]` of a request, if it names one. */
function logLevelOf(envelope: unknown): string | undefined {
  const level = (envelope as Record<string, unknown> | undefined)?.[LOG_LEVEL_META_KEY];
  return typeof level === 'string' ? level : undefined;
}

/**
 * The modern handlers of every endpoint this instance has served (a project's facade, one MCP
 * server's own endpoint), created on first use: each has its own listen streams, so a change
 * reaches the listeners of the endpoints it concerns, of that project only.
 */
export function createModernHandlers(modernDeps: ModernDeps) {
  const deps = modernDeps;
  const handlers = new Map<
    string,
    { handler: McpHttpHandler; registry: Subscription; notices: () => void }
  >();
  return {
    for(project: string, endpoint?: string): McpHttpHandler {
      const key = `${project}\u0000${endpoint ?? ''}`;
      let h = handlers.get(key);
      if (!h) {
        const handler = createProjectHandler(deps, project, endpoint);
        // Registry changes of the project become notifications/tools/list_changed on its open
        // subscriptions/listen streams.
        const registry = subscribeGuarded(deps.nc, deps.registryChanged(project), {
          log: deps.logger.child({ project }),
          onMessage: () => handler.notify.toolsChanged(),
        });
        // Its MCP servers' changes, as this endpoint names them; the SDK's listen router sends
        // each to the streams that asked for it (a resource's update: those that name it).
        // Log messages have no listen stream: they go with the request they belong to.
        const notices = deps.notices.watch(project, (server, notice) => {
          const n = noticeFor(endpoint, server, notice);
          if (!n) return;
          switch (n.method) {
            case 'notifications/resources/updated':
              if (typeof n.params['uri'] === 'string')
                handler.notify.resourceUpdated(n.params['uri']);
              return;
            case 'notifications/resources/list_changed':
              handler.notify.resourcesChanged();
              return;
            case 'notifications/prompts/list_changed':
              handler.notify.promptsChanged();
              return;
            case 'notifications/message':
              return;
            default:
              return n.method satisfies never;
          }
        });
        h = { handler, registry, notices };
        handlers.set(key, h);
      }
      return h.handler;
    },
    async close(): Promise<void> {
      for (const h of handlers.values()) {
        h.registry.unsubscribe();
        h.notices();
        await h.handler.close();
      }
      handlers.clear();
    },
  };
}
