// What every command gets: the resolved settings, the output streams, the api, and a NATS
// connection opened on first use (management commands never touch NATS).
import { readFile } from 'node:fs/promises';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import {
  credentialIdOf,
  credsConnectOptions,
  explainNatsConnectError,
  type CredsConnectOptions,
} from '@toolmesh/client';
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
  /** The bus credential NATS was opened with (known once nats() resolved), if one is set. */
  busCredentialId(): string | undefined;
  close(): Promise<void>;
}

export function createContext(settings: Settings, io: Io, signal: AbortSignal): Context {
  let nc: Promise<NatsConnection> | undefined;
  let credentialId: string | undefined;
  return {
    settings,
    io,
    api: createApi(settings),
    signal,
    nats: () => {
      nc ??= busAuth(settings.busCreds).then(({ options, credential }) => {
        credentialId = credential;
        return connect({
          ...options,
          servers: settings.natsUrl.split(','),
          name: 'toolmesh-cli',
          timeout: 5_000,
          // A terminal command should fail at once when the server is gone, not wait forever.
          maxReconnectAttempts: 0,
        }).catch((err: unknown) => {
          throw new CliError(
            ExitCode.connection,
            'unreachable',
            explainNatsConnectError(err, settings.natsUrl, settings.busCreds),
            { cause: err },
          );
        });
      });
      return nc;
    },
    busCredentialId: () => credentialId,
    close: async () => {
      if (!nc) return;
      const conn = await nc.catch(() => undefined);
      if (conn && !conn.isClosed()) await conn.drain().catch(() => undefined);
    },
  };
}

/** Connect options of the bus credential file, if one is set; the error names the file only. */
async function busAuth(
  path: string | undefined,
): Promise<{ options: Partial<CredsConnectOptions>; credential?: string | undefined }> {
  if (path === undefined) return { options: {} };
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code ?? 'error';
    throw new CliError(ExitCode.usage, 'usage', `cannot read bus credential ${path} (${code})`, {
      cause: err,
    });
  }
  try {
    return { options: await credsConnectOptions(text), credential: await credentialIdOf(text) };
  } catch (err) {
    throw new CliError(
      ExitCode.usage,
      'usage',
      `bus credential ${path}: ${(err as Error).message}`,
      {
        cause: err,
      },
    );
  }
}
