// The Postgres connection pool every process shares. Timeouts are set per connection so that
// no query can hold a connection forever, and idle-client errors are logged instead of crashing
// the process (pg emits them on the pool when the server goes away between queries). An outage
// is logged once, and its end (outage.ts).
import { Pool } from 'pg';
import type { Logger } from 'pino';
import { createOutageWatch, isReportedOutage } from './outage.ts';

export interface PoolOptions {
  /** `postgres://user:password@host:port/database`. */
  url: string;
  /** Most connections this pool opens at once. */
  max: number;
  /** Server-side cap on one statement; 0 disables it. */
  statementTimeoutMs: number;
  /** How long to wait for a new connection (TCP, TLS and startup) before failing. */
  connectTimeoutMs: number;
  /** Shown in pg_stat_activity, so an operator can tell which process holds a connection. */
  applicationName?: string;
  logger: Logger;
}

export function createPool(options: PoolOptions): Pool {
  const pool = new Pool({
    connectionString: options.url,
    max: options.max,
    // Sent in the startup packet, so it applies to every statement on the connection without
    // an extra round trip, and `RESET statement_timeout` returns to it.
    statement_timeout: options.statementTimeoutMs,
    connectionTimeoutMillis: options.connectTimeoutMs,
    idleTimeoutMillis: 30_000,
    // Without keepalives a connection to a host that vanished (no RST) looks healthy until the
    // OS gives up, minutes later.
    keepAlive: true,
    keepAliveInitialDelayMillis: 10_000,
    ...(options.applicationName === undefined ? {} : { application_name: options.applicationName }),
  });
  const log = options.logger.child({ component: 'pg-pool' });
  // An idle client that loses its connection emits 'error' on the pool; without a listener
  // Node treats it as an unhandled 'error' event and exits. The pool discards that client
  // itself, and the next query opens a new connection.
  const outage = createOutageWatch(log);
  pool.on('error', (err) => {
    outage.failed(err);
    if (isReportedOutage(err)) log.debug({ err }, 'idle postgres connection failed');
    else log.warn({ err }, 'idle postgres connection failed; the pool discards it');
  });
  // Every query and connect is watched: an outage is logged once, its end once.
  const watch = <T>(p: Promise<T>): Promise<T> => {
    p.then(
      () => outage.succeeded(),
      (err: unknown) => outage.failed(err),
    );
    return p;
  };
  const query = pool.query.bind(pool) as (...args: unknown[]) => unknown;
  pool.query = ((...args: unknown[]) => {
    const r = query(...args);
    return r instanceof Promise ? watch(r) : r;
  }) as typeof pool.query;
  const connect = pool.connect.bind(pool) as (...args: unknown[]) => unknown;
  pool.connect = ((...args: unknown[]) => {
    const r = connect(...args);
    return r instanceof Promise ? watch(r) : r;
  }) as typeof pool.connect;
  return pool;
}
