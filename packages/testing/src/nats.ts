// The NATS fixture: a real nats-server with JetStream and the deployment's authentication, as
// `pnpm stack` and compose run it (operator mode, the `full` resolver, one user per service and
// per-project bus credentials, all built by @toolmesh/nats-auth), and a subject root of its own
// per call, so test files share one server without their streams colliding. The shared server is
// started once per test process from the local binary; a test that restarts or kills its server
// starts its own with startTestNatsServer. Every permission violation such a server logs is
// recorded (violations.ts) and fails the test it happened in.
import { randomBytes, randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import {
  connect,
  credsAuthenticator,
  type ConnectionOptions,
  type NatsConnection,
} from '@nats-io/transport-node';
import {
  ServiceUser,
  credentialInboxPrefix,
  generateBusKeys,
  mintUser,
  natsServerConfig,
  projectCredentialPermissions,
  publicKeyOf,
  servicePermissions,
  type BusKeys,
} from '@toolmesh/nats-auth';
import { createNames } from '@toolmesh/protocol';
import { startLocalNats, type LocalNats } from './local-nats.ts';
import { startNatsCluster } from './nats-cluster.ts';
import {
  projectStreamMaker,
  provisionOnPublish,
  type ProjectStreamMaker,
} from './project-streams.ts';
import { sharedPerProcess } from './processes.ts';
import { nameUsers, recordServerLog } from './violations.ts';

/** Where an authenticated NATS of the deployment's kind answers, and the keys it trusts. */
export interface TestNatsAuth {
  /** Client URL(s), comma-separated for a cluster. */
  readonly url: string;
  keys: BusKeys;
  /** The keys file's JSON, for the api's `nats.auth_keys`. */
  keysJson: string;
}

/** A single authenticated nats-server of a test's own (one it may stop, kill, restart). */
export interface TestNatsServer extends LocalNats, TestNatsAuth {}

export interface TestNatsServerOptions {
  port?: number;
  /** JetStream and resolver folder, kept by `close()`; a temporary one by default. */
  dir?: string;
  /** Largest message the server accepts (the stack's 1 MiB by default). */
  maxPayloadBytes?: number;
  /** fsync each JetStream write where the server can (LocalNatsOptions.syncAlways). */
  syncAlways?: boolean;
}

/** A bus credential of one project, as POST /v1/projects/:p/bus-credentials issues it. */
export interface TestProjectCredential {
  creds: string;
  inboxPrefix: string;
  publicKey: string;
}

export interface TestNats {
  /** Server URL, e.g. `nats://127.0.0.1:4222`. */
  url: string;
  /** A subject root no other fixture call uses: `t` and 10 hex digits. */
  root: string;
  keys: BusKeys;
  keysJson: string;
  /** The `.creds` text of a service user scoped to this root (what nats-auth writes). */
  creds(user: ServiceUser): string;
  /**
   * The environment a service runs with as its own user: URL, subject root, creds, and the
   * account keys for the api only (as `pnpm stack` gives them).
   */
  env(user: ServiceUser): Record<string, string>;
  /** A connection as a service user (`admin` for a test's own checks); closed by cleanup. */
  connect(user: ServiceUser, options?: ConnectionOptions): Promise<NatsConnection>;
  /** A bus credential of a project, minted as the api mints one. */
  projectCredential(project: string, name?: string): Promise<TestProjectCredential>;
  /**
   * A connection as a new bus credential of the project, the way the SDK makes one. Like the
   * api issuing a credential, it makes the project's command stream first.
   */
  connectProject(project: string, options?: ConnectionOptions): Promise<NatsConnection>;
  /**
   * Makes the project's command stream as the api does (project-streams.ts). A publish to a
   * project without one over a connection of `connect` makes it too, as the api's does.
   */
  provisionProject: ProjectStreamMaker;
  /** Closes the connections made here and deletes the root's streams and KV buckets. */
  cleanup(): Promise<void>;
}

const SHARED = Symbol.for('toolmesh.testing.authNatsServer');

/** Fresh deployment keys whose service users the violation reports will name. */
function testKeys(): BusKeys {
  const keys = generateBusKeys();
  nameUsers(
    new Map(Object.entries(keys.service_user_seeds).map(([name, s]) => [publicKeyOf(s), name])),
  );
  return keys;
}

/** A server's output, line by line, into the violation log. */
function recordOutput(): (text: string) => void {
  let partial = '';
  return (text) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    recordServerLog(lines);
  };
}

export async function startTestNatsServer(
  options: TestNatsServerOptions = {},
): Promise<TestNatsServer> {
  const keys = testKeys();
  const server = await startLocalNats({
    ...(options.port === undefined ? {} : { port: options.port }),
    ...(options.dir === undefined ? {} : { dir: options.dir }),
    onOutput: recordOutput(),
    ...(options.syncAlways === undefined ? {} : { syncAlways: options.syncAlways }),
    config: ({ port, storeDir, syncAlways }) =>
      natsServerConfig(keys, {
        host: '127.0.0.1',
        port,
        storeDir: join(storeDir, 'jetstream'),
        resolverDir: join(storeDir, 'jwt'),
        maxPayloadBytes: options.maxPayloadBytes ?? 1024 * 1024,
        syncAlways,
      }),
  });
  return { ...server, keys, keysJson: JSON.stringify(keys) };
}

/** A cluster of authenticated servers (the same keys on every node), for tests that kill nodes. */
export interface TestNatsCluster extends TestNatsAuth {
  readonly nodes: readonly LocalNats[];
  close(): Promise<void>;
}

export async function startTestNatsCluster(
  options: { nodes?: number } = {},
): Promise<TestNatsCluster> {
  const keys = testKeys();
  const admin = await mintUser(keys, 'admin', {
    pub: ['$JS.API.>', '_INBOX.>'],
    sub: ['_INBOX.>'],
  });
  const cluster = await startNatsCluster({
    nodes: options.nodes ?? 3,
    onOutput: recordOutput(),
    config: ({ port, storeDir, cluster: c }) =>
      natsServerConfig(keys, {
        host: '127.0.0.1',
        port,
        storeDir: join(storeDir, 'jetstream'),
        resolverDir: join(storeDir, 'jwt'),
        maxPayloadBytes: 1024 * 1024,
        cluster: c,
      }),
    connectOptions: { authenticator: credsAuthenticator(new TextEncoder().encode(admin.creds)) },
  });
  return {
    url: cluster.url,
    nodes: cluster.nodes,
    keys,
    keysJson: JSON.stringify(keys),
    close: () => cluster.close(),
  };
}

export async function useNats(options: { server?: TestNatsAuth } = {}): Promise<TestNats> {
  const server = options.server ?? (await sharedServer());
  const { keys, url } = server;
  const root = `t${randomBytes(5).toString('hex')}`;
  const creds = new Map<ServiceUser, string>();
  for (const user of Object.values(ServiceUser)) {
    const seed = keys.service_user_seeds[user];
    if (seed === undefined) throw new Error(`the test keys have no seed for ${user}`);
    creds.set(user, (await mintUser(keys, user, servicePermissions(root, user), { seed })).creds);
  }
  const credsOf = (user: ServiceUser): string => creds.get(user) as string;
  const opened: NatsConnection[] = [];
  const open = async (c: string, o: ConnectionOptions = {}): Promise<NatsConnection> => {
    let nc: NatsConnection;
    try {
      nc = await connect({
        servers: url.split(','),
        timeout: 5_000,
        authenticator: credsAuthenticator(new TextEncoder().encode(c)),
        ...o,
      });
    } catch (err) {
      throw new Error(`cannot connect to the test NATS at ${url}`, { cause: err });
    }
    opened.push(nc);
    return nc;
  };
  const projectCredential = async (
    project: string,
    name = 'test',
  ): Promise<TestProjectCredential> => {
    const inboxPrefix = credentialInboxPrefix(project, randomUUID());
    const minted = await mintUser(
      keys,
      name,
      projectCredentialPermissions(root, project, inboxPrefix),
    );
    return { creds: minted.creds, inboxPrefix, publicKey: minted.publicKey };
  };
  // Fail here, with the URL in the message, rather than in the middle of a test.
  const admin = await open(credsOf(ServiceUser.admin));
  await (await jetstreamManager(admin)).getAccountInfo();
  const provisionProject = projectStreamMaker(admin, root);
  let cleaned = false;
  return {
    url,
    root,
    keys,
    keysJson: server.keysJson,
    creds: credsOf,
    env: (user) => ({
      CG__NATS__URL: url,
      CG__NATS__SUBJECT_ROOT: root,
      CG__NATS__CREDS: credsOf(user),
      CG__NATS__AUTH_KEYS: user === ServiceUser.api ? server.keysJson : '',
    }),
    connect: async (user, o) => {
      const nc = await open(credsOf(user), o);
      if (user !== ServiceUser.sandboxReaper) provisionOnPublish(nc, root, provisionProject);
      return nc;
    },
    projectCredential,
    provisionProject,
    connectProject: async (project, o = {}) => {
      await provisionProject(project);
      const cred = await projectCredential(project);
      return open(cred.creds, { inboxPrefix: cred.inboxPrefix, ...o });
    },
    cleanup: async () => {
      if (cleaned) return;
      cleaned = true;
      for (const nc of opened) if (nc !== admin && !nc.isClosed()) await nc.close();
      // A server of the test's own goes with its store; only the shared one needs tidying.
      if (options.server === undefined) await deleteStreamsOf(await jetstreamManager(admin), root);
      if (!admin.isClosed()) await admin.close();
    },
  };
}

async function deleteStreamsOf(jsm: JetStreamManager, root: string): Promise<void> {
  const names = createNames(root);
  // Besides the well-known streams, anything a test made with the root's prefix (the project
  // command streams among them): the root is random, so nothing else can carry it. A KV bucket
  // is the stream KV_<bucket>.
  const prefixes = [`${root}_`, `KV_${root}_`, `OBJ_${root}_`];
  const doomed = new Set([names.eventStream, `KV_${names.leaseBucket}`]);
  for await (const name of jsm.streams.names()) {
    if (prefixes.some((p) => name.startsWith(p))) doomed.add(name);
  }
  for (const name of doomed) {
    try {
      await jsm.streams.delete(name);
    } catch (err) {
      if (!(err instanceof JetStreamApiError && err.code === JetStreamApiCodes.StreamNotFound))
        throw err;
    }
  }
}

function sharedServer(): Promise<TestNatsServer> {
  return sharedPerProcess(SHARED, () => startTestNatsServer());
}
