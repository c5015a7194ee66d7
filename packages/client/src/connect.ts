// connectMesh(): a client with no configuration, for scripts and examples. Explicit options
// win, then the environment (NATS_URL, TOOLMESH_BUS_CREDS, TOOLMESH_PROJECT,
// TOOLMESH_SUBJECT_ROOT), then a running `pnpm stack` found on this machine (its NATS URL, root,
// local project and bus credential). It says on stderr which stack it uses, and a refused
// connection is explained in words that name the fix.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { DEFAULT_ROOT } from '@toolmesh/protocol';
import { createClient, type Client } from './client.ts';
import { credentialIdOf, credsConnectOptions } from './credentials.ts';
import { explainNatsConnectError } from './explain.ts';
import { describeStack, findLocalStack, type LocalStack } from './local-stack.ts';

export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

export interface ConnectMeshOptions {
  /** NATS server(s), comma-separated (env NATS_URL). */
  servers?: string;
  /** Path of a project's bus credential, a .creds file (env TOOLMESH_BUS_CREDS). */
  credsFile?: string;
  /** The project calls go to by default (env TOOLMESH_PROJECT). */
  project?: string;
  /** Subject root of the deployment (env TOOLMESH_SUBJECT_ROOT). */
  root?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /** Where to look for a checkout's running stack (default: the process's cwd). */
  cwd?: string;
  /** Where the line naming the stack goes (default: stderr); null says nothing. */
  log?: ((line: string) => void) | null;
}

export interface Mesh {
  client: Client;
  nc: NatsConnection;
  /** The project named by the options, the environment or the local stack. */
  project: string;
  /** The stack whose settings were used, if one was. */
  stack: LocalStack | undefined;
  close(): Promise<void>;
}

/** This checkout: a stack run here is found from any folder. */
const OWN_CHECKOUT = join(import.meta.dirname, '..', '..', '..');

/** Connects a client as the options, the environment or the local stack say. */
export async function connectMesh(opts: ConnectMeshOptions = {}): Promise<Mesh> {
  const env = opts.env ?? process.env;
  const pick = (given: string | undefined, name: string) => given ?? (env[name] || undefined);
  const explicitServers = pick(opts.servers, 'NATS_URL');
  const stack = findLocalStack({
    env,
    ...(opts.cwd !== undefined ? { cwd: opts.cwd } : {}),
    checkouts: [OWN_CHECKOUT],
  });
  // The stack is used while the server given (if any) is its own: its credential goes nowhere else.
  const fromStack =
    stack !== undefined && (explicitServers ?? stack.natsUrl) === stack.natsUrl ? stack : undefined;
  const servers = explicitServers ?? fromStack?.natsUrl ?? DEFAULT_NATS_URL;
  const credsFile = pick(opts.credsFile, 'TOOLMESH_BUS_CREDS') ?? fromStack?.busCreds;
  const project = pick(opts.project, 'TOOLMESH_PROJECT') ?? fromStack?.project;
  const root = pick(opts.root, 'TOOLMESH_SUBJECT_ROOT') ?? fromStack?.root ?? DEFAULT_ROOT;
  if (project === undefined) {
    throw new Error(
      'no project: pass { project } or set TOOLMESH_PROJECT (a running `pnpm stack` gives its local project)',
    );
  }
  if (fromStack) {
    const log = opts.log === undefined ? (l: string) => process.stderr.write(`${l}\n`) : opts.log;
    log?.(`toolmesh: ${describeStack(fromStack)}`);
  }
  const creds = credsFile === undefined ? undefined : await readFile(credsFile, 'utf8');
  let nc: NatsConnection;
  try {
    nc = await connect({
      servers: servers.split(','),
      name: 'toolmesh-sdk',
      ...(creds === undefined ? {} : await credsConnectOptions(creds)),
    });
  } catch (err) {
    throw new Error(explainNatsConnectError(err, servers, credsFile), { cause: err });
  }
  const credentialId = creds === undefined ? undefined : await credentialIdOf(creds);
  const client = createClient({ nc, root, credentialId });
  return {
    client,
    nc,
    project,
    stack: fromStack,
    close: async () => {
      await client.close();
      await nc.drain();
    },
  };
}
