// What the api's clients asked an MCP server for through this instance, beyond single requests:
// resource subscriptions (counted: the pooled connection is shared by every session of the
// project, and the server hears an unsubscribe only when no client holds the URI any more) and
// the log level. They are kept per (project, server) beside the pooled connection, not in it,
// because the server forgets them with the connection: a connection that was lost (or closed
// while nobody held anything) is opened again with them restored (pool.ts), so the clients,
// which still hold their subscriptions, go on hearing the updates.
import type { Logger } from 'pino';
import type { McpConnection } from '@toolmesh/mcp';

export interface Held {
  /** Subscribed URIs, as the server names them, with how many clients hold each. */
  readonly subscriptions: Map<string, number>;
  /** The last level a client set with logging/setLevel (the api always asks for `debug`). */
  level: string | undefined;
}

export interface HeldRequests {
  /** What is held on a server; created empty on first use. */
  of(project: string, server: string): Held;
  /** Does any client hold a subscription on the server? Its connection then stays open. */
  subscribed(project: string, server: string): boolean;
  /** A deleted or switched-off server: nothing of it is restored. */
  forget(project: string, server: string): void;
  /** Sends what is held to a connection just opened; a refusal is logged, not fatal. */
  restore(project: string, server: string, conn: McpConnection, log: Logger): Promise<void>;
}

export function createHeldRequests(): HeldRequests {
  const all = new Map<string, Held>();
  const keyOf = (project: string, server: string) => `${project}\u0000${server}`;
  const of = (project: string, server: string): Held => {
    const key = keyOf(project, server);
    let held = all.get(key);
    if (!held) all.set(key, (held = { subscriptions: new Map(), level: undefined }));
    return held;
  };
  return {
    of,
    subscribed: (project, server) => (all.get(keyOf(project, server))?.subscriptions.size ?? 0) > 0,
    forget: (project, server) => void all.delete(keyOf(project, server)),
    async restore(project, server, conn, log) {
      const held = all.get(keyOf(project, server));
      if (!held) return;
      const sends: [string, Record<string, unknown>][] = [
        ...(held.level !== undefined
          ? [['logging/setLevel', { level: held.level }] as [string, Record<string, unknown>]]
          : []),
        ...[...held.subscriptions.keys()].map(
          (uri) => ['resources/subscribe', { uri }] as [string, Record<string, unknown>],
        ),
      ];
      for (const [method, params] of sends) {
        try {
          const res = await conn.request(method, params);
          if ('error' in res) {
            log.warn(
              { project, mcp_server: server, method, error: res.error },
              'the MCP server refused a request restored on its new connection',
            );
          }
        } catch (err) {
          log.warn(
            { err, project, mcp_server: server, method },
            'could not restore a request on a new MCP connection',
          );
          return;
        }
      }
      if (sends.length > 0) {
        log.info(
          { project, mcp_server: server, subscriptions: held.subscriptions.size },
          'restored what clients held on a new MCP connection',
        );
      }
    },
  };
}
