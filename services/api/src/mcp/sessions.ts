// The 2025-era MCP sessions of this api instance (initialize, Mcp-Session-Id): each a facade
// server (facade.ts) on the SDK's streamable HTTP transport, with its event store for resumed
// streams, its project's registry changes as tools/list_changed, and its MCP servers'
// notifications as far as it asked for them. Sessions live in memory: what they refer to
// (executions, cards) is durable, so a client that lost its session opens a new one. Their number
// is capped per instance and per project, and an idle one is closed.
import { randomUUID } from 'node:crypto';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import type { Server } from '@modelcontextprotocol/sdk/server/index.js';
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js';
import type { Logger } from 'pino';
import { subscribeGuarded } from '@toolmesh/bus';
import type { Config } from '@toolmesh/config';
import type { Subjects } from '@toolmesh/protocol';
import type { AgentsStore } from '@toolmesh/store';
import { notFound } from '../errors.ts';
import { createSlots } from '../slots.ts';
import { createSessionEventStore, type SessionEventStore } from './event-store.ts';
import type { Facade } from './facade.ts';
import { logPasses, noticeFor, type UpstreamNotices } from './notices.ts';
import { createSessionWatch, type SessionWatch } from './watch.ts';

export interface Session {
  id: string;
  project: string;
  /** The MCP server whose own endpoint opened the session; undefined on the project's. */
  server: string | undefined;
  mcp: Server;
  transport: WebStandardStreamableHTTPServerTransport;
  /** What the session's SSE streams sent, for a client that resumes one (event-store.ts). */
  events: SessionEventStore;
  registry: Subscription;
  /** Stops the session's share of its MCP servers' notifications (mcp/notices.ts). */
  notices: () => void;
  /** What it asked to be notified of (mcp/watch.ts). */
  watch: SessionWatch;
  lastSeen: number;
  /** Gives the session's place back (mcp_max_sessions and the project's share). */
  release: () => void;
}

/** An initialize's transport and server; its session exists once the SDK accepted it. */
export interface OpenedSession {
  transport: WebStandardStreamableHTTPServerTransport;
  server: Server;
  /** Gives the place back (an initialize the SDK refused opened no session). */
  release: () => void;
  opened: () => boolean;
}

export interface Sessions {
  get: (id: string) => Session | undefined;
  /** A transport and server for an initialize request of a scope. */
  open: (
    project: string,
    mcpServer: string | undefined,
    agent: string | undefined,
    caller: string,
  ) => Promise<OpenedSession>;
  /** Closes every session (the api's shutdown). */
  close: () => Promise<void>;
}

const SWEEP_EVERY_MS = 60_000;

export function createSessions(deps: {
  facade: Facade;
  store: AgentsStore;
  nc: NatsConnection;
  subjects: Subjects;
  notices: UpstreamNotices;
  config: Config;
  logger: Logger;
}): Sessions {
  const { facade, store, nc, subjects, notices, config } = deps;
  const log = deps.logger;
  const sessions = new Map<string, Session>();
  const { mcp_session_idle_ms: idleMs, mcp_sse_retry_ms: retryMs } = config.api;
  // Sessions per instance and per project: one project filling the instance would refuse
  // every other project's initialize until its sessions went idle (30 minutes).
  const sessionSlots = createSlots({
    what: 'MCP sessions',
    total: config.api.mcp_max_sessions,
    perOwner: config.api.mcp_max_sessions_per_project,
    owner: 'project',
    totalSetting: 'mcp_max_sessions',
    perOwnerSetting: 'mcp_max_sessions_per_project',
    totalCode: 'mcp_session_capacity',
    perOwnerCode: 'mcp_session_limit',
  });

  async function close(s: Session, why: string) {
    if (!sessions.delete(s.id)) return;
    s.release();
    s.registry.unsubscribe();
    s.notices();
    facade.watches.release(s.project, s.server, s.watch);
    log.debug({ session: s.id, project: s.project, why }, 'MCP session closed');
    await s.mcp.close().catch(() => undefined);
  }

  const sweep = setInterval(() => {
    const cutoff = Date.now() - idleMs;
    for (const s of sessions.values()) {
      if (s.lastSeen < cutoff) void close(s, 'idle');
    }
  }, SWEEP_EVERY_MS).unref();

  /** A transport and server for an initialize request; the session exists once it succeeded. */
  async function open(
    project: string,
    mcpServer: string | undefined,
    agent: string | undefined,
    caller: string,
  ) {
    if (agent !== undefined && !(await store.agents.get(project, agent))) {
      throw notFound('agent', agent);
    }
    // Held from here: an initialize in flight counts, or many at once could pass the cap.
    const release = sessionSlots.take(project);
    const watch = createSessionWatch();
    const server = facade.newServer({ project, agent, caller, server: mcpServer }, watch);
    let session: Session | undefined;
    const events = createSessionEventStore();
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      // Resumability (2025-11-25): the SDK opens each POST stream with a priming event (id,
      // retry, empty data) for clients of that revision and replays from Last-Event-ID; the
      // route adds the same to the GET stream.
      eventStore: events,
      retryInterval: retryMs,
      onsessioninitialized: (id) => {
        // Registry changes of the project become notifications/tools/list_changed.
        const registry = subscribeGuarded(nc, subjects.registryChanged(project), {
          log: log.child({ session: id, project }),
          onMessage: () => {
            server.sendToolListChanged().catch(() => undefined);
          },
        });
        // Its MCP servers' notifications, as this endpoint names them, as far as it asked.
        const stop = notices.watch(project, (from, notice) => {
          const n = noticeFor(mcpServer, from, notice);
          if (!n) return;
          if (n.method === 'notifications/resources/updated') {
            if (!watch.resources.has(String(n.params['uri']))) return;
          } else if (n.method === 'notifications/message') {
            if (!logPasses(n.params['level'], watch.level)) return;
          }
          server.notification({ method: n.method, params: n.params }).catch(() => undefined);
        });
        session = {
          id,
          project,
          server: mcpServer,
          mcp: server,
          transport,
          events,
          registry,
          notices: stop,
          watch,
          lastSeen: Date.now(),
          release,
        };
        sessions.set(id, session);
        log.debug({ session: id, project, agent }, 'MCP session opened');
      },
    });
    transport.onclose = () => {
      if (session) void close(session, 'closed');
    };
    try {
      await server.connect(transport);
    } catch (err) {
      release();
      throw err;
    }
    return { transport, server, release, opened: () => session !== undefined };
  }

  return {
    get: (id) => sessions.get(id),
    open,
    close: async () => {
      clearInterval(sweep);
      await Promise.all([...sessions.values()].map((s) => close(s, 'shutdown')));
    },
  };
}
