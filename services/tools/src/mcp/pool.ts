// MCP connections of this instance, one per (project, server), opened on first use and shared
// by every call to that server's tools. A connection that dies (the process exited, the HTTP
// session is gone) is dropped the moment it is noticed, so the next call opens a new one. An
// http server's auth is read from the project's secrets at connect time (an OAuth token on every
// request instead: oauth.ts); its requests go
// through the egress guard. A stdio server runs in a sandbox session of its project
// (session.ts), killed with the connection. Idle connections are closed after a while, unless a
// client holds a resource subscription on them; a lost connection that held subscriptions is
// opened again at once, and every new connection gets what clients hold restored (held.ts).
import type { Subscription } from '@nats-io/transport-node';
import { fetch as undiciFetch } from 'undici';
import type { Bus } from '@toolmesh/bus';
import {
  connectMcp,
  McpClientError,
  type McpConnection,
  type McpEndpoint,
  type McpNotification,
} from '@toolmesh/mcp';
import { decodeMessage, type OAuth2Auth } from '@toolmesh/protocol';
import type { McpServerRecord, RegistryStore, SkillsStore } from '@toolmesh/store';
import type { Egress } from '../egress.ts';
import { egressDeniedIn } from '../egress.ts';
import { createRedactor } from '../redact.ts';
import { ensurePackageEnv, type PackageEnvOptions } from './package-env.ts';
import { UpstreamFailure } from '../kinds/kind.ts';
import type { OAuthTokens } from '../oauth.ts';
import { openServerSession, type ServerSession, type SessionDeps } from './session.ts';
import { untilAborted } from '../abort.ts';
import { createHeldRequests, type HeldRequests } from './held.ts';

export interface PoolDeps extends SessionDeps {
  /** Its servers' rows (registry); their sandbox sessions and package envs (skills). */
  store: RegistryStore & SkillsStore;
  egress: Egress;
  /** A project secret's value (throws secret_unavailable). */
  secret(project: string, name: string): Promise<string>;
  /** OAuth access tokens of servers with auth type oauth2. */
  oauth: OAuthTokens;
  /** Connections unused this long are closed. */
  idleCloseMs?: number;
  /** Bounds a connect (and a stdio server's start). */
  connectTimeoutMs?: number;
  /** A connected server said its tool set changed (notifications/tools/list_changed). */
  onToolsChanged?: (project: string, server: string) => void;
  /** Any other notification of a connected server (resource updates, list changes, logs). */
  onNotification?: (project: string, server: string, n: McpNotification) => void;
  /** Where an imported server's npm package is installed from ([skills] npm_registry...). */
  packages?: PackageEnvOptions;
}

/** What a pooled connection was opened from: a re-created or re-imported server differs. */
export const connectionIdentityOf = (row: Pick<McpServerRecord, 'server_id' | 'revision'>) =>
  `${row.server_id}#${row.revision}`;

export interface PooledConnection {
  readonly conn: McpConnection;
  /**
   * The server row it was opened from: its id and revision (connectionIdentityOf) tell a
   * re-created or re-imported server apart.
   */
  readonly serverId: string;
  /** Secret values the connection was opened with: results and errors must not show them. */
  readonly secretValues: readonly string[];
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
   * are deleted (the server was), or the server is switched off, its connection and sandbox go
   * at once, not at the idle sweep.
   */
  watchRegistry(bus: Bus): Subscription;
  /** What clients hold on each server (subscriptions, log level), restored on a new connection. */
  readonly held: HeldRequests;
  /** Closes every connection and sandbox. */
  close(): Promise<void>;
}

interface Entry {
  project: string;
  server: string;
  opening: Promise<PooledConnection>;
  lastUsed: number;
  session?: ServerSession;
  conn?: McpConnection;
}

const DEFAULT_IDLE_CLOSE_MS = 10 * 60_000;
/** A lost connection that held subscriptions is opened again after 1 s, 2 s, 4 s... at most 30 s. */
const REOPEN_FIRST_MS = 1_000;
const REOPEN_MAX_MS = 30_000;
const REOPEN_ATTEMPTS = 12;
/** OAuth tokens remembered per connection (a token refreshed mid-call is still redacted). */
const MAX_TOKENS = 8;

/** Adds an OAuth token a connection sent to its secret values, keeping the newest few. */
function noteSent(sent: string[], tokens: string[], token: string): void {
  if (tokens.includes(token)) return;
  tokens.push(token);
  sent.push(token);
  if (tokens.length > MAX_TOKENS) {
    const i = sent.indexOf(tokens.shift()!);
    if (i >= 0) sent.splice(i, 1);
  }
}
const DEFAULT_CONNECT_MS = 30_000;

export function createMcpPool(deps: PoolDeps): McpPool {
  const log = deps.logger.child({ component: 'mcp-pool' });
  const entries = new Map<string, Entry>();
  const keyOf = (project: string, server: string) => `${project}\u0000${server}`;
  // A server's sandbox being ended: its next connection waits for that end, or it would claim
  // the same sandbox row the end is about to mark destroyed (and run in a sandbox being removed).
  const ending = new Map<string, Promise<void>>();
  const endSession = (e: Entry): Promise<void> => {
    const session = e.session;
    if (!session) return Promise.resolve();
    const key = keyOf(e.project, e.server);
    const done = session.destroy().finally(() => {
      if (ending.get(key) === done) ending.delete(key);
    });
    ending.set(key, done);
    return done;
  };
  const idleMs = deps.idleCloseMs ?? DEFAULT_IDLE_CLOSE_MS;
  const held = createHeldRequests();
  const reopening = new Set<NodeJS.Timeout>();
  let closing = false;

  /**
   * Opens a lost connection again while clients hold subscriptions on it: the server can only
   * send their updates over a connection (held.ts restores them on it).
   */
  function reopenLater(project: string, server: string, attempt = 0): void {
    if (closing || !held.subscribed(project, server)) return;
    const timer = setTimeout(
      () => {
        reopening.delete(timer);
        if (closing || entries.has(keyOf(project, server))) return;
        if (!held.subscribed(project, server)) return;
        pool.get(project, server).then(
          () =>
            log.info(
              { project, mcp_server: server },
              'MCP connection reopened for its subscriptions',
            ),
          (err: unknown) => {
            log.warn(
              { err, project, mcp_server: server, attempt },
              'could not reopen an MCP connection',
            );
            if (attempt + 1 < REOPEN_ATTEMPTS) reopenLater(project, server, attempt + 1);
          },
        );
      },
      Math.min(REOPEN_MAX_MS, REOPEN_FIRST_MS * 2 ** attempt),
    );
    timer.unref();
    reopening.add(timer);
  }

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

  /**
   * Requests of an OAuth server: each carries the current access token (so a token refreshed
   * while the connection is open is used at once); a 401 forces one refresh and one resend, and
   * a second 401 throws upstream_unauthorized (found in the SDK's error by the executor).
   */
  const oauthFetch = (
    project: string,
    server: string,
    auth: OAuth2Auth,
    sent: string[],
  ): typeof egressFetch => {
    const tokens: string[] = [];
    return async (url, init) => {
      const signal = init?.signal ?? undefined;
      const send = (token: string) => {
        noteSent(sent, tokens, token);
        const headers = new Headers(init?.headers);
        headers.set('authorization', `Bearer ${token}`);
        return egressFetch(url, { ...init, headers });
      };
      let token = await deps.oauth.token(project, auth, { signal });
      let res = await send(token);
      if (res.status !== 401) return res;
      await res.body?.cancel().catch(() => undefined);
      token = await deps.oauth.token(project, auth, { rejected: token, signal });
      res = await send(token);
      if (res.status !== 401) return res;
      await res.body?.cancel().catch(() => undefined);
      throw new UpstreamFailure(
        `MCP server ${server} answered 401 to a freshly refreshed OAuth token`,
        { code: 'upstream_unauthorized', retryable: false, details: { status: 401, server } },
      );
    };
  };

  async function endpointOf(
    row: McpServerRecord,
    entry: Entry,
    secrets: string[],
  ): Promise<McpEndpoint> {
    const secret = async (name: string) => {
      const value = await deps.secret(row.project_id, name);
      secrets.push(value);
      return value;
    };
    if (row.transport === 'http') {
      const headers: Record<string, string> = { ...row.headers };
      if (row.auth && row.auth.type !== 'oauth2') {
        const value = await secret(row.auth.secret);
        if (row.auth.type === 'bearer') headers['authorization'] = `Bearer ${value}`;
        else headers[row.auth.header!.toLowerCase()] = value;
      }
      for (const [name, h] of Object.entries(row.secret_headers)) {
        if ('secret' in h) {
          headers[name.toLowerCase()] = await secret(h.secret);
          continue;
        }
        let text = h.template;
        for (const [placeholder, s] of Object.entries(h.secrets)) {
          text = text.split(`{${placeholder}}`).join(await secret(s));
        }
        headers[name.toLowerCase()] = text;
      }
      return {
        transport: 'http',
        url: row.url!,
        headers,
        fetch:
          row.auth?.type === 'oauth2'
            ? oauthFetch(row.project_id, row.name, row.auth, secrets)
            : egressFetch,
      };
    }
    const env: Record<string, string> = { ...row.env };
    for (const [name, s] of Object.entries(row.secret_env)) env[name] = await secret(s);
    await ending.get(keyOf(row.project_id, row.name));
    entry.session = await openServerSession(deps, row.project_id, row.name);
    if (row.package) {
      if (!deps.packages) {
        throw new McpClientError('connect_failed', 'this tools service cannot install packages');
      }
      const pkg = await ensurePackageEnv(
        {
          store: deps.store,
          provider: await deps.sandboxes(),
          instanceId: deps.instanceId,
          options: deps.packages,
          logger: log,
        },
        entry.session.sandbox,
        row.project_id,
        row.package,
        Date.now() + deps.packages.buildTimeoutMs,
      );
      return {
        transport: 'stdio',
        sandbox: entry.session.sandbox,
        command: row.command!,
        args: [pkg.entry, ...row.args],
        env,
      };
    }
    return {
      transport: 'stdio',
      sandbox: entry.session.sandbox,
      command: row.command!,
      args: row.args,
      env,
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
    // A switched-off server is not reached, whoever asks (a call racing the switch, a refresh).
    if (!row.enabled) {
      throw new McpClientError('connect_failed', `MCP server ${server} is disabled`);
    }
    let conn: McpConnection;
    const secretValues: string[] = [];
    try {
      const endpoint = await endpointOf(row, entry, secretValues);
      // No call's signal here: the connection is shared, and one caller's cancel must not fail
      // the others waiting for it (each waits under its own signal in get()).
      const { onToolsChanged, onNotification } = deps;
      conn = await connectMcp(endpoint, {
        timeoutMs: deps.connectTimeoutMs ?? DEFAULT_CONNECT_MS,
        logger: log,
        ...(onToolsChanged ? { onToolsChanged: () => onToolsChanged(project, server) } : {}),
        ...(onNotification ? { onNotification: (n) => onNotification(project, server, n) } : {}),
      });
    } catch (err) {
      await endSession(entry);
      throw redactedError(err, secretValues);
    }
    entry.conn = conn;
    conn.onClose((why) => {
      log.info({ project, mcp_server: server, why }, 'MCP connection closed');
      // Still pooled: lost, not closed by the pool (a drop, the idle sweep, close).
      const lost = entries.get(key) === entry;
      if (lost) entries.delete(key);
      void endSession(entry);
      if (lost) reopenLater(project, server);
    });
    await held.restore(project, server, conn, log);
    log.info({ project, mcp_server: server, transport: conn.transport }, 'MCP connection open');
    return {
      conn,
      serverId: connectionIdentityOf(row),
      secretValues,
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
        // A held subscription is a use: its updates come over this connection.
        if (now - e.lastUsed > idleMs && e.conn && !held.subscribed(e.project, e.server)) {
          entries.delete(key);
          void e.conn.close();
        }
      }
    },
    Math.min(idleMs, 60_000),
  );
  sweep.unref();

  /** An update of a server's row (a re-import) replaces the connection opened for the old one. */
  async function dropIfStale(project: string, server: string): Promise<void> {
    try {
      const e = entries.get(keyOf(project, server));
      const pooled = await e?.opening.catch(() => undefined);
      if (!pooled) return;
      const row = await deps.store.mcpServers.get(project, server);
      if (!row || connectionIdentityOf(row) !== pooled.serverId) {
        await pool.drop(project, server, pooled.conn);
      }
    } catch (err) {
      log.warn({ err, project, mcp_server: server }, 'could not check an MCP connection');
    }
  }

  const pool: McpPool = {
    get: async (project, server, signal) => {
      const key = keyOf(project, server);
      let entry = entries.get(key);
      if (entry?.conn?.closed) {
        entries.delete(key);
        entry = undefined;
      }
      if (!entry) {
        const e: Entry = { project, server, lastUsed: Date.now(), opening: undefined as never };
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
      // A replaced server (re-imported) or a failed call's connection: clients' subscriptions
      // still want a connection. A deleted or disabled server was forgotten before its drop.
      reopenLater(project, server);
    },
    watchRegistry: (bus) =>
      bus.subscribe(bus.subjects.registryChangedFilter(), (subject, data) => {
        try {
          const { project } = bus.subjects.parse(subject);
          const evt = decodeMessage('registry_changed', data);
          if (
            evt.change !== 'deleted' &&
            evt.change !== 'updated' &&
            evt.change !== 'server_disabled'
          )
            return;
          const servers = new Set(evt.tools.map((t) => t.slice(0, t.indexOf('.'))));
          if (evt.server) servers.add(evt.server);
          for (const server of servers) {
            if (!entries.has(keyOf(project, server))) continue;
            if (evt.change === 'deleted' || evt.change === 'server_disabled') {
              held.forget(project, server);
              void pool.drop(project, server);
            } else void dropIfStale(project, server);
          }
        } catch (err) {
          log.debug({ err, subject }, 'ignoring a malformed registry event');
        }
      }),
    held,
    close: async () => {
      closing = true;
      for (const t of reopening) clearTimeout(t);
      reopening.clear();
      clearInterval(sweep);
      const all = [...entries.values()];
      entries.clear();
      await Promise.all(
        all.map(async (e) => {
          const pooled = await e.opening.catch(() => undefined);
          await pooled?.conn.close();
          await endSession(e);
        }),
      );
    },
  };
  return pool;
}

/** A failed open names no secret it was opened with (a server may print its environment). */
function redactedError(err: unknown, secrets: readonly string[]): unknown {
  if (secrets.length === 0 || !(err instanceof Error)) return err;
  const r = createRedactor();
  for (const s of secrets) r.add(s);
  const message = r.redactText(err.message);
  if (message === err.message) return err;
  if (err instanceof McpClientError) {
    return new McpClientError(err.reason, message, {
      ...(err.details ? { details: r.redact(err.details) } : {}),
    });
  }
  return new Error(message);
}
