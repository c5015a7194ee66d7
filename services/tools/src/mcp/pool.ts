// MCP connections of this instance, one per (project, server), opened on first use and shared
// by every call to that server's tools. A connection that dies (the process exited, the HTTP
// session is gone) is dropped the moment it is noticed, so the next call opens a new one. An
// http server's auth is read from the project's secrets at connect time; its requests go
// through the egress guard. A stdio server runs in a sandbox session of its project
// (session.ts), killed with the connection. Idle connections are closed after a while.
import type { Subscription } from '@nats-io/transport-node';
import { fetch as undiciFetch } from 'undici';
import type { Bus } from '@toolmesh/bus';
import { connectMcp, McpClientError, type McpConnection, type McpEndpoint } from '@toolmesh/mcp';
import { decodeMessage } from '@toolmesh/protocol';
import type { McpServerRecord, Store } from '@toolmesh/store';
import type { Egress } from '../egress.ts';
import { egressDeniedIn } from '../egress.ts';
import { openServerSession, type ServerSession, type SessionDeps } from './session.ts';

export interface PoolDeps extends SessionDeps {
  store: Store;
  egress: Egress;
  /** A project secret's value (throws secret_unavailable). */
  secret(project: string, name: string): Promise<string>;
  /** Connections unused this long are closed. */
  idleCloseMs?: number;
  /** Bounds a connect (and a stdio server's start). */
  connectTimeoutMs?: number;
  /** A connected server said its tool set changed (notifications/tools/list_changed). */
  onToolsChanged?: (project: string, server: string) => void;
}

export interface PooledConnection {
  readonly conn: McpConnection;
  /** The server row it was opened from (its id tells a re-created server apart). */
  readonly serverId: string;
  touch(): void;
}

export interface McpPool {
  /** The live connection to a server, opened when there is none. Throws McpClientError. */
  get(project: string, server: string, signal?: AbortSignal): Promise<PooledConnection>;
  /**
   * Closes and forgets a server's connection (deleted server, failed call). With `only`, just
   * that connection: a call that saw its connection die must not close the new one another call
   * has opened meanwhile.
   */
  drop(project: string, server: string, only?: McpConnection): Promise<void>;
  /**
   * Follows the registry's change events (every instance hears them): when tools of a server
   * are deleted (the server was), its connection and sandbox go at once, not at the idle sweep.
   */
  watchRegistry(bus: Bus): Subscription;
  /** Closes every connection and sandbox. */
  close(): Promise<void>;
}

interface Entry {
  opening: Promise<PooledConnection>;
  lastUsed: number;
  session?: ServerSession;
  conn?: McpConnection;
}

const DEFAULT_IDLE_CLOSE_MS = 10 * 60_000;
const DEFAULT_CONNECT_MS = 30_000;

export function createMcpPool(deps: PoolDeps): McpPool {
  const log = deps.logger.child({ component: 'mcp-pool' });
  const entries = new Map<string, Entry>();
  const keyOf = (project: string, server: string) => `${project}\u0000${server}`;
  const idleMs = deps.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS;

  const egressFetch: NonNullable<Extract<McpEndpoint, { transport: 'http' }>['fetch']> = async (
    url,
    init,
  ) => {
    const u = new URL(url);
    deps.egress.checkUrl(u);
    try {
      // undici's Response is the WHATWG one the SDK reads; only the declared types differ.
      const res: unknown = await undiciFetch(u, {
        ...(init as object),
        dispatcher: deps.egress.dispatcher,
      });
      return res as Response;
    } catch (err) {
      throw egressDeniedIn(err) ?? err;
    }
  };

  async function endpointOf(row: McpServerRecord, entry: Entry): Promise<McpEndpoint> {
    if (row.transport === 'http') {
      const headers: Record<string, string> = { ...row.headers };
      if (row.auth) {
        const value = await deps.secret(row.project_id, row.auth.secret);
        if (row.auth.type === 'bearer') headers['authorization'] = `Bearer ${value}`;
        else headers[row.auth.header!.toLowerCase()] = value;
      }
      return { transport: 'http', url: row.url!, headers, fetch: egressFetch };
    }
    entry.session = await openServerSession(deps, row.project_id, row.name);
    return {
      transport: 'stdio',
      sandbox: entry.session.sandbox,
      command: row.command!,
      args: row.args,
      env: row.env,
    };
  }

  async function open(
    project: string,
    server: string,
    key: string,
    entry: Entry,
  ): Promise<PooledConnection> {
    const row = await deps.store.mcpServers.get(project, server);
    if (!row) {
      throw new McpClientError('connect_failed', `MCP server ${server} is not registered`);
    }
    let conn: McpConnection;
    try {
      const endpoint = await endpointOf(row, entry);
      // No call's signal here: the connection is shared, and one caller's cancel must not fail
      // the others waiting for it (each waits under its own signal in get()).
      const onToolsChanged = deps.onToolsChanged;
      conn = await connectMcp(endpoint, {
        timeoutMs: deps.connectTimeoutMs ?? DEFAULT_CONNECT_MS,
        logger: log,
        ...(onToolsChanged ? { onToolsChanged: () => onToolsChanged(project, server) } : {}),
      });
    } catch (err) {
      await entry.session?.destroy();
      throw err;
    }
    entry.conn = conn;
    conn.onClose((why) => {
      log.info({ project, mcp_server: server, why }, 'MCP connection closed');
      if (entries.get(key) === entry) entries.delete(key);
      void entry.session?.destroy();
    });
    log.info({ project, mcp_server: server, transport: conn.transport }, 'MCP connection open');
    return {
      conn,
      serverId: row.server_id,
      touch: () => {
        entry.lastUsed = Date.now();
        entry.session?.touch();
      },
    };
  }

  const sweep = setInterval(
    () => {
      const now = Date.now();
      for (const [key, e] of entries) {
        if (now - e.lastUsed > idleMs && e.conn) {
          entries.delete(key);
          void e.conn.close();
        }
      }
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();

  const pool: McpPool = {
    get: async (project, server, signal) => {
      const key = keyOf(project, server);
      let entry = entries.get(key);
      if (entry?.conn?.closed) {
        entries.delete(key);
        entry = undefined;
      }
      if (!entry) {
        const e: Entry = { lastUsed: Date.now(), opening: undefined as never };
        e.opening = open(project, server, key, e);
        // A failed open is forgotten at once: the next call tries again.
        e.opening.catch(() => {
          if (entries.get(key) === e) entries.delete(key);
        });
        entries.set(key, e);
        entry = e;
      }
      const pooled = await untilAborted(entry.opening, signal);
      pooled.touch();
      return pooled;
    },
    drop: async (project, server, only) => {
      const key = keyOf(project, server);
      const e = entries.get(key);
      if (only && e?.conn !== only) {
        await only.close();
        return;
      }
      if (entries.get(key) === e) entries.delete(key);
      const pooled = await e?.opening.catch(() => undefined);
      await pooled?.conn.close();
    },
    watchRegistry: (bus) =>
      bus.subscribe(bus.subjects.registryChangedFilter(), (subject, data) => {
        try {
          const { project } = bus.subjects.parse(subject);
          const evt = decodeMessage('registry_changed', data);
          if (evt.change !== 'deleted') return;
          const servers = new Set(evt.tools.map((t) => t.slice(0, t.indexOf('.'))));
          for (const server of servers) {
            if (entries.has(keyOf(project, server))) void pool.drop(project, server);
          }
        } catch (err) {
          log.debug({ err, subject }, 'ignoring a malformed registry event');
        }
      }),
    close: async () => {
      clearInterval(sweep);
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(
        all.map(async (e) => {
          const pooled = await e.opening.catch(() => undefined);
          await pooled?.conn.close();
          await e.session?.destroy();
        }),
      );
    },
  };
  return pool;
}

/** `p`, or the signal's reason once it fires first (`p` goes on for whoever else awaits it). */
function untilAborted<T>(p: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return p;
  if (signal.aborted) return Promise.reject(signal.reason as Error);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason as Error);
    signal.addEventListener('abort', onAbort, { once: true });
    p.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}
