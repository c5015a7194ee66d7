// A three-node (or n-node) NATS cluster with JetStream from the local binary, on loopback ports:
// for tests that kill and restart a node mid-run, and for `pnpm stack --cluster`. Each node is a
// LocalNats, so stop() keeps its store and start() brings it back into the cluster.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, type ConnectionOptions } from '@nats-io/transport-node';
import { startLocalNats, type LocalNats } from './local-nats.ts';
import { freePort } from './ports.ts';
import { waitUntil } from './processes.ts';

export interface NatsClusterOptions {
  nodes?: number;
  /** Folder holding one store per node (kept by close()); a temporary folder by default. */
  dir?: string;
  name?: string;
  startTimeoutMs?: number;
  /**
   * A node's configuration file text (e.g. operator mode with JWT auth), given its ports, store
   * and cluster settings; the node then starts with `-c` only.
   */
  config?: (node: {
    port: number;
    storeDir: string;
    /** Whether the node may fsync every write (LocalNatsOptions.syncAlways). */
    syncAlways: boolean;
    cluster: { name: string; serverName: string; port: number; routes: string[] };
  }) => Promise<string>;
  /** Sees every chunk of every node's output (e.g. to collect permission violations). */
  onOutput?: (text: string) => void;
  /** How the readiness check connects (e.g. the credentials a configured server wants). */
  connectOptions?: ConnectionOptions;
  /** Every node fsyncs each JetStream write where it can (LocalNatsOptions.syncAlways). */
  syncAlways?: boolean;
}

export interface NatsCluster {
  /** Every node's client URL, comma-separated, as `nats.url` takes them. */
  readonly url: string;
  readonly nodes: readonly LocalNats[];
  /** Resolves once the cluster has a JetStream meta leader and answers JetStream requests. */
  ready(timeoutMs?: number): Promise<void>;
  close(): Promise<void>;
}

export async function startNatsCluster(options: NatsClusterOptions = {}): Promise<NatsCluster> {
  const count = options.nodes ?? 3;
  const created = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'toolmesh-nats-cluster-')));
  const name = options.name ?? 'toolmesh';
  const clientPorts: number[] = [];
  const routePorts: number[] = [];
  for (let i = 0; i < count; i++) {
    clientPorts.push(await freePort());
    routePorts.push(await freePort());
  }
  const routes = routePorts.map((p) => `nats://127.0.0.1:${p}`);
  const nodes = await Promise.all(
    clientPorts.map((port, i) => {
      const cluster = {
        name,
        serverName: `n${i + 1}`,
        port: routePorts[i] as number,
        routes: routes.filter((_, j) => j !== i),
      };
      const config = options.config;
      return startLocalNats({
        port,
        dir: join(dir, `n${i + 1}`),
        ...(options.startTimeoutMs !== undefined ? { startTimeoutMs: options.startTimeoutMs } : {}),
        cluster,
        ...(options.syncAlways !== undefined ? { syncAlways: options.syncAlways } : {}),
        ...(options.onOutput === undefined ? {} : { onOutput: options.onOutput }),
        ...(config === undefined
          ? {}
          : {
              config: (o: { port: number; storeDir: string; syncAlways: boolean }) =>
                config({ ...o, cluster }),
            }),
      });
    }),
  );
  const url = nodes.map((n) => n.url).join(',');

  const ready = async (timeoutMs = 30_000): Promise<void> => {
    const nc = await connect({
      servers: url.split(','),
      timeout: 5_000,
      ...options.connectOptions,
    });
    try {
      const jsm = await jetstreamManager(nc, { timeout: 2_000, checkAPI: false });
      await waitUntil(
        async () => {
          try {
            await jsm.getAccountInfo();
            return true;
          } catch {
            return false;
          }
        },
        { timeoutMs, what: 'the NATS cluster did not elect a JetStream leader' },
      );
    } finally {
      await nc.close();
    }
  };
  await ready(options.startTimeoutMs ?? 30_000);

  return {
    url,
    nodes,
    ready,
    close: async () => {
      await Promise.all(nodes.map((n) => n.close()));
      if (created) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}
