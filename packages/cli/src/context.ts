// What every command gets: the resolved settings, the output streams, the api, and a NATS
// connection opened on first use (management commands never touch NATS).
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createApi, type Api } from './http.ts';
import { CliError, ExitCode } from './exit.ts';
import type { Io } from './output.ts';
import type { Settings } from './settings.ts';

export interface Context {
  readonly settings: Settings;
  readonly io: Io;
  readonly api: Api;
  /** Aborted on Ctrl-C: long-running commands (call, watch) end cleanly. */
  readonly signal: AbortSignal;
  nats(): Promise<NatsConnection>;
  close(): Promise<void>;
}

export function createContext(settings: Settings, io: Io, signal: AbortSignal): Context {
  let nc: Promise<NatsConnection> | undefined;
  return {
    settings,
    io,
    api: createApi(settings),
    signal,
    nats: () => {
      nc ??= connect({
        servers: settings.natsUrl.split(','),
        name: 'toolmesh-cli',
        timeout: 5_000,
        // A terminal command should fail at once when the server is gone, not wait forever.
        maxReconnectAttempts: 0,
      }).catch((err: unknown) => {
        throw new CliError(
          ExitCode.connection,
          'unreachable',
          `cannot connect to NATS at ${settings.natsUrl}: ${(err as Error).message}`,
          { cause: err },
        );
      });
      return nc;
    },
    close: async () => {
      if (!nc) return;
      const conn = await nc.catch(() => undefined);
      if (conn && !conn.isClosed()) await conn.drain().catch(() => undefined);
    },
  };
}
