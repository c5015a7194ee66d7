// The NATS fixture: a real server with JetStream and a subject root of its own per call, so test
// files share one server without their streams colliding. The server is NATS_URL when set, else
// a testcontainers nats container when a Docker engine answers, else a local nats-server; the
// last two are started once per test process and live until it exits.
import { randomBytes } from 'node:crypto';
import { jetstreamManager, JetStreamApiCodes, JetStreamApiError } from '@nats-io/jetstream';
import type { JetStreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { createNames } from '@toolmesh/protocol';
import { dockerAvailable } from './docker.ts';
import { sharedPerProcess } from './processes.ts';
import { startLocalNats } from './local-nats.ts';

export interface TestNats {
  /** Server URL, e.g. `nats://127.0.0.1:4222`. */
  url: string;
  /** A subject root no other fixture call uses: `t` and 10 hex digits. */
  root: string;
  /** Deletes the root's streams (with their consumers) and its KV buckets. */
  cleanup(): Promise<void>;
}

const NATS_IMAGE = 'nats:2.10-alpine';
const SHARED = Symbol.for('toolmesh.testing.natsServer');

export async function useNats(): Promise<TestNats> {
  const url = process.env['NATS_URL'] ?? (await sharedServer());
  const root = `t${randomBytes(5).toString('hex')}`;
  // Fail here, with the URL in the message, rather than in the middle of a test.
  await withJetStream(url, async (jsm) => {
    await jsm.getAccountInfo();
  });
  let cleaned = false;
  return {
    url,
    root,
    cleanup: async () => {
      if (cleaned) return;
      cleaned = true;
      await withJetStream(url, (jsm) => deleteStreamsOf(jsm, root));
    },
  };
}

async function deleteStreamsOf(jsm: JetStreamManager, root: string): Promise<void> {
  const names = createNames(root);
  // Besides the two well-known streams, anything a test made with the root's prefix: the
  // root is random, so nothing else can carry it. A KV bucket is the stream KV_<bucket>.
  const prefixes = [`${root}_`, `KV_${root}_`, `OBJ_${root}_`];
  const doomed = new Set([names.commandStream, names.eventStream, `KV_${names.leaseBucket}`]);
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

async function withJetStream<T>(
  url: string,
  fn: (jsm: JetStreamManager) => Promise<T>,
): Promise<T> {
  let nc;
  try {
    nc = await connect({ servers: url, timeout: 5_000 });
  } catch (err) {
    throw new Error(`cannot connect to NATS at ${url}`, { cause: err });
  }
  try {
    const jsm = await jetstreamManager(nc).catch((err: unknown) => {
      throw new Error(`NATS at ${url} has no JetStream (start it with -js)`, { cause: err });
    });
    return await fn(jsm);
  } finally {
    await nc.close();
  }
}

function sharedServer(): Promise<string> {
  return sharedPerProcess(SHARED, startServer);
}

async function startServer(): Promise<string> {
  if (await dockerAvailable()) {
    const { GenericContainer, Wait } = await import('testcontainers');
    // Stopped by testcontainers' reaper when this process ends.
    const container = await new GenericContainer(NATS_IMAGE)
      .withCommand(['-js'])
      .withExposedPorts(4222)
      .withWaitStrategy(Wait.forLogMessage(/Server is ready/))
      .start();
    return `nats://${container.getHost()}:${container.getMappedPort(4222)}`;
  }
  return (await startLocalNats()).url;
}
