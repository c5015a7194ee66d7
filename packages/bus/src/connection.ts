// One NATS connection per process, with reconnects that never give up by default and status
// changes logged, so an operator can see a flapping server in the logs.
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import { RetryableError } from '@toolmesh/protocol';
import { redactUrls } from '@toolmesh/config';

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
