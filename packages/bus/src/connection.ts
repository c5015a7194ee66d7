// One NATS connection per process, with reconnects that never give up by default and status
// changes logged, so an operator can see a flapping server in the logs.
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { RetryableError, msgIdKeyOf } from '@toolmesh/protocol';
import { redactUrls } from '@toolmesh/config';
import { credsSeed } from '@toolmesh/nats-auth';
import { useMsgIdKey } from '@toolmesh/stream-publish';

export interface ConnectOptions {
  url: string;
  /** Shown in the server's connection list: service name and instance id. */
  name: string;
  connectTimeoutMs: number;
  reconnectWaitMs: number;
  /** -1 reconnects forever. */
  maxReconnectAttempts: number;
  logger: Logger;
  /** The user's `.creds` text (JWT and seed); none connects without authentication. */
  creds?: string;
  /** Where replies arrive; a project credential must use the prefix it was issued with. */
  inboxPrefix?: string;
}

export async function connectNats(opts: ConnectOptions): Promise<NatsConnection> {
  const log = opts.logger.child({ component: 'nats' });
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: opts.url.split(',').map((s) => s.trim()),
      name: opts.name,
      timeout: opts.connectTimeoutMs,
      reconnect: true,
      reconnectTimeWait: opts.reconnectWaitMs,
      maxReconnectAttempts: opts.maxReconnectAttempts,
      waitOnFirstConnect: false,
      // Otherwise every request (each JetStream publish and KV write) builds an Error up front
      // for its async stack trace; on the hot path that cost rivals the request itself.
      noAsyncTraces: true,
      ...(opts.creds === undefined || opts.creds === ''
        ? {}
        : { authenticator: credsAuthenticator(new TextEncoder().encode(opts.creds)) }),
      ...(opts.inboxPrefix === undefined ? {} : { inboxPrefix: opts.inboxPrefix }),
    });
  } catch (cause) {
    // The URL may carry a user's password or a token: the message shows it masked.
    throw new RetryableError(
      `cannot connect to NATS at ${redactUrls(opts.url)}: ${(cause as Error).message}`,
      { cause },
    );
  }
  if (opts.creds !== undefined && opts.creds !== '') sealMsgIdsWithCreds(nc, opts.creds);
  log.info({ server: nc.getServer() }, 'connected to NATS');
  void (async () => {
    for await (const s of nc.status()) {
      switch (s.type) {
        case 'disconnect':
        case 'reconnect':
        case 'reconnecting':
        case 'staleConnection':
        case 'error':
        case 'ldm':
        case 'slowConsumer': // the client dropped messages of a subscription that fell behind
          log.warn(
            { status: s.type, detail: 'server' in s ? s.server : undefined },
            'NATS connection status',
          );
          break;
        case 'update':
        case 'ping':
        case 'forceReconnect':
        case 'close':
          log.debug({ status: s.type }, 'NATS connection status');
          break;
        default:
          s satisfies never;
      }
    }
  })();
  return nc;
}

/**
 * Seals the Nats-Msg-Ids published over `nc` with a key derived from the seed of its user's
 * credential (`creds`, the `.creds` text): every instance of a service (one credential) seals
 * alike, so a retry by any of them dedupes, and no other user, holding another seed, can publish
 * one of these ids first. Without it a connection seals with a random key of its own.
 */
export function sealMsgIdsWithCreds(nc: NatsConnection, creds: string): void {
  useMsgIdKey(nc, msgIdKeyOf(credsSeed(creds)));
}

/** How long `closeNats` drains by default: a few round trips, never a reconnect's wait. */
const DRAIN_TIMEOUT_MS = 5_000;

/**
 * Drains the connection (subscriptions flushed, publishes sent), bounded by `timeoutMs`, then
 * closes it. nats.js's drain ends in a PING whose answer a disconnected client awaits until it
 * reconnects, so with the server gone a plain drain() never returns and neither would the
 * process's SIGTERM; past the bound the connection is closed outright (what was buffered for a
 * server that is not there is lost either way).
 */
export async function closeNats(
  nc: NatsConnection,
  o: { timeoutMs?: number | undefined; logger?: Logger } = {},
): Promise<void> {
  if (nc.isClosed()) return;
  const timeoutMs = o.timeoutMs ?? DRAIN_TIMEOUT_MS;
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<'late'>((resolve) => {
    timer = setTimeout(() => resolve('late'), timeoutMs);
  });
  // A drain that fails (already draining, closed meanwhile) or is overtaken by the timer still
  // ends in close(); its rejection must not go unhandled after the race.
  const drained = nc.drain().then(
    () => 'drained' as const,
    (err: unknown) => {
      o.logger?.warn({ err }, 'NATS drain failed; closing the connection');
      return 'failed' as const;
    },
  );
  try {
    if ((await Promise.race([drained, late])) === 'late') {
      o.logger?.warn(
        { timeout_ms: timeoutMs },
        'NATS drain did not finish; closing the connection',
      );
    }
  } finally {
    clearTimeout(timer);
  }
  if (!nc.isClosed()) await nc.close();
}
