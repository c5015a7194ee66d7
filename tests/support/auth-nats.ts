// An authenticated nats-server of a test's own: operator mode with JWT auth (the `full` resolver,
// as `pnpm stack` and compose run it), JetStream in a temporary folder, a free port. Each mesh
// service gets its own user's creds; `admin` is for the test's own connection and cleanup.
import { join } from 'node:path';
import { connect, credsAuthenticator, type NatsConnection } from '@nats-io/transport-node';
import {
  generateBusKeys,
  mintUser,
  natsServerConfig,
  publicKeyOf,
  servicePermissions,
  type BusKeys,
  type ServiceUser,
} from '@toolmesh/nats-auth';
import { startLocalNats, type LocalNats } from '@toolmesh/testing';

export interface AuthNats {
  url: string;
  keys: BusKeys;
  /** The keys file's JSON, for the api's `nats.auth_keys`. */
  keysJson: string;
  /** The subject root every user here is scoped to. */
  root: string;
  /** Creds text of a service user of this root. */
  creds(user: ServiceUser): Promise<string>;
  /** A connection as the given creds (the test's own connections are closed by `close`). */
  connectAs(
    creds: string,
    opts?: { inboxPrefix?: string; reconnect?: boolean },
  ): Promise<NatsConnection>;
  /** The server's permission-violation log lines so far. */
  violations(): string[];
  /** Public keys of the service users (api, skills, ...), to tell them from tenants. */
  serviceKeys(): string[];
  server: LocalNats;
  close(): Promise<void>;
}

export async function startAuthNats(root: string): Promise<AuthNats> {
  const keys = generateBusKeys();
  const violations: string[] = [];
  let partial = '';
  const server = await startLocalNats({
    onOutput: (text) => {
      const lines = (partial + text).split('\n');
      partial = lines.pop() ?? '';
      violations.push(...lines.filter((l) => /Violation/.test(l)));
    },
    config: ({ port, storeDir }) =>
      natsServerConfig(keys, {
        host: '127.0.0.1',
        port,
        storeDir: join(storeDir, 'js'),
        resolverDir: join(storeDir, 'jwt'),
      }),
  });
  const opened: NatsConnection[] = [];
  const creds = async (user: ServiceUser) =>
    (
      await mintUser(keys, user, servicePermissions(root, user), {
        seed: keys.service_user_seeds[user] as string,
      })
    ).creds;
  return {
    url: server.url,
    keys,
    keysJson: JSON.stringify(keys),
    root,
    creds,
    server,
    violations: () => [...violations],
    serviceKeys: () => Object.values(keys.service_user_seeds).map(publicKeyOf),
    connectAs: async (c, o = {}) => {
      const nc = await connect({
        servers: server.url,
        authenticator: credsAuthenticator(new TextEncoder().encode(c)),
        ...(o.inboxPrefix === undefined ? {} : { inboxPrefix: o.inboxPrefix }),
        reconnect: o.reconnect ?? true,
        timeout: 5_000,
      });
      opened.push(nc);
      return nc;
    },
    close: async () => {
      for (const nc of opened) if (!nc.isClosed()) await nc.close();
      await server.close();
    },
  };
}
