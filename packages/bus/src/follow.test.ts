import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { Msg, NatsConnection } from '@nats-io/transport-node';
import { useNats, type TestNats } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNames, createSubjects } from '@toolmesh/protocol';
import { createBus, type Bus } from './bus.ts';
import { connectNats } from './connection.ts';
import { followStream } from './follow.ts';

const logger = pino({ level: 'silent' });
const enc = (s: string) => new TextEncoder().encode(s);

let nats: TestNats;
let nc: NatsConnection;
let jsm: JetStreamManager;
let bus: Bus;
let names: ReturnType<typeof createNames>;
let subjects: ReturnType<typeof createSubjects>;

beforeAll(async () => {
  nats = await useNats();
  nc = await connectNats({
    url: nats.url,
    // The api's user: the live feed follows the command stream with it.
    creds: nats.creds('api'),
    name: 'follow-test',
    connectTimeoutMs: 5_000,
    reconnectWaitMs: 500,
    maxReconnectAttempts: 3,
    logger,
  });
  jsm = await jetstreamManager(nc);
  bus = await createBus({ nc, root: nats.root, logger });
  await bus.provision({
    cmdMaxAgeSec: 3_600,
    evtMaxAgeSec: 3_600,
    dedupeWindowSec: 60,
    leaseBucketMaxAgeSec: 3_600,
  });
  for (const p of ['p1', 'p2']) await nats.provisionProject(p);
  names = createNames(nats.root);
  subjects = createSubjects(nats.root);
});

afterAll(async () => {
  await bus?.close();
  await nats?.cleanup();
});

async function consumersOf(stream: string): Promise<string[]> {
  const out: string[] = [];
  for await (const c of jsm.consumers.list(stream)) out.push(c.name);
  return out;
}

async function eventually(ok: () => boolean, ms = 5_000): Promise<void> {
  const end = Date.now() + ms;
  while (!ok()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 50));
  }
}

const call = (project: string, text: string) =>
  bus.publish(
    subjects.toolCall({ project, channel: 'main', target: 'builtin', tool: 'echo' }),
    enc(text),
  );

describe('followStream', () => {
  it("delivers what its filter takes from now on, with each message's own subject", async () => {
    await call('p1', 'before');
    const got: Msg[] = [];
    const name = names.liveFeedConsumer('p1', 'one');
    const follow = await followStream(nc, {
      stream: names.projectCommandStream('p1'),
      filter: subjects.projectToolCallsFilter('p1'),
      name,
      log: logger,
      onMessage: (m) => got.push(m),
      onEnd: (err) => {
        throw err;
      },
    });
    expect(await consumersOf(names.projectCommandStream('p1'))).toContain(name);
    await call('p2', 'other project');
    await call('p1', 'after');
    await eventually(() => got.length > 0);
    await nc.flush();
    expect(got.map((m) => m.string())).toEqual(['after']);
    expect(got[0]!.subject).toBe(
      subjects.toolCall({ project: 'p1', channel: 'main', target: 'builtin', tool: 'echo' }),
    );
    await follow.stop();
    await follow.stop();
    expect(await consumersOf(names.projectCommandStream('p1'))).not.toContain(name);
  });

  it('ends on its own, once, when the server lost its consumer', async () => {
    const ended: Error[] = [];
    const name = names.liveFeedConsumer('p1', 'two');
    await followStream(nc, {
      stream: names.projectCommandStream('p1'),
      filter: subjects.projectToolCallsFilter('p1'),
      name,
      log: logger,
      heartbeatMs: 100,
      onMessage: () => undefined,
      onEnd: (err) => ended.push(err),
    });
    await jsm.consumers.delete(names.projectCommandStream('p1'), name);
    await eventually(() => ended.length > 0);
    expect(ended[0]).toMatchObject({ code: 'unavailable' });
    await new Promise((r) => setTimeout(r, 500));
    expect(ended).toHaveLength(1);
  });

  it('fails to start with a retryable error when the stream is missing', async () => {
    const err = await followStream(nc, {
      stream: `${nats.root}_NOPE`,
      filter: subjects.projectToolCallsFilter('p1'),
      name: names.liveFeedConsumer('p1', 'three'),
      log: logger,
      onMessage: () => undefined,
      onEnd: () => undefined,
    }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable' });
    expect(nc.isClosed()).toBe(false);
  });
});
