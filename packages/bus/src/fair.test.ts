import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { useNats, type TestNats } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from './bus.ts';
import { connectNats } from './connection.ts';
import type { Consumption } from './consume.ts';
import { createFairSlots } from './fair.ts';

const logger = pino({ level: 'silent' });
let nats: TestNats;
let nc: NatsConnection;
let bus: Bus;

beforeAll(async () => {
  nats = await useNats();
  nc = await connectNats({
    url: nats.url,
    // A tool service's own user: it consumes every project's calls and hears of new streams.
    creds: nats.creds('tools'),
    name: 'fair-test',
    connectTimeoutMs: 5_000,
    reconnectWaitMs: 500,
    maxReconnectAttempts: 3,
    logger,
  });
  bus = await createBus({ nc, root: nats.root, logger });
  await bus.provision({
    cmdMaxAgeSec: 3600,
    evtMaxAgeSec: 3600,
    dedupeWindowSec: 60,
    leaseBucketMaxAgeSec: 600,
  });
});

afterAll(async () => {
  await bus?.close();
  await nats?.cleanup();
});

describe('fair slots', () => {
  it('hand a freed slot to the project that waited longest since it was served', async () => {
    const slots = createFairSlots(1);
    const first = await slots.acquire('a');
    const order: string[] = [];
    const wait = (key: string) =>
      slots.acquire(key).then((release) => {
        order.push(key);
        release?.();
      });
    const all = Promise.all([wait('a'), wait('a'), wait('a'), wait('b'), wait('c'), wait('b')]);
    first?.();
    await all;
    expect(order).toEqual(['a', 'b', 'c', 'a', 'b', 'a']);
    expect(slots.busy()).toBe(0);
  });

  it("cap a flood at maxPerKey while a neighbour is active, so the neighbour's call starts at once", async () => {
    let t = 0;
    const slots = createFairSlots(8, { maxPerKey: 3, activeWindowMs: 1_000, now: () => t });
    // Alone, the flood takes every slot.
    const flood = await Promise.all(Array.from({ length: 8 }, () => slots.acquire('a')));
    expect(slots.busy()).toBe(8);
    const more = Array.from({ length: 10 }, () => slots.acquire('a'));
    // The neighbour waits for one slot only, and gets the first to free.
    const b1 = slots.acquire('b');
    flood[0]?.();
    const releaseB = await b1;
    // While b is active, the flood's freed slots are not given back to it beyond its cap.
    for (const r of flood.slice(1)) r?.();
    expect(slots.busy()).toBe(1 + 3);
    releaseB?.();
    t += 10;
    // b's next call, within the window: a slot is free, taken at once.
    let started = false;
    const b2 = slots.acquire('b').then((r) => {
      started = true;
      return r;
    });
    await Promise.resolve();
    expect(started).toBe(true);
    (await b2)?.();
    // b idle past the window: the flood may use every slot again (at its next release).
    t += 2_000;
    const granted = await Promise.all(more.slice(0, 3));
    granted[0]?.();
    await Promise.all(more.slice(3, 9));
    expect(slots.busy()).toBe(8);
    slots.close();
    expect(await more[9]).toBeUndefined();
  }, 5_000);

  it('let two floods share every slot round robin, the cap notwithstanding', async () => {
    const slots = createFairSlots(8, { maxPerKey: 2, activeWindowMs: 1_000, now: () => 0 });
    const a = await Promise.all(Array.from({ length: 8 }, () => slots.acquire('a')));
    const got = { a: 0, c: 0 };
    const wait = (key: 'a' | 'c') => void slots.acquire(key).then((r) => r && got[key]++);
    for (let i = 0; i < 8; i++) wait('c');
    for (let i = 0; i < 8; i++) wait('a');
    for (const r of a) r?.();
    await new Promise((r) => setImmediate(r));
    // a is held back only while c is under the cap; then the two floods take turns, and every
    // slot is in use rather than 2 each with 4 idle.
    expect(slots.busy()).toBe(8);
    expect(got.a + got.c).toBe(8);
    expect(got.a).toBeGreaterThanOrEqual(3);
    expect(got.c).toBeGreaterThanOrEqual(3);
    slots.close();
  }, 5_000);

  it('answer waiters with nothing once closed', async () => {
    const slots = createFairSlots(1);
    await slots.acquire('a');
    const waiting = slots.acquire('b');
    slots.close();
    expect(await waiting).toBeUndefined();
    expect(await slots.acquire('c')).toBeUndefined();
  });
});

describe('consumeProjects', () => {
  const call = (project: string, i: number) =>
    bus.publish(
      bus.subjects.toolCall({ project, channel: 'c', target: 'fair', tool: 'work' }),
      new TextEncoder().encode(`${project}-${i}`),
    );

  it("takes a neighbour's call before a project's backlog is through, and finds new streams", async () => {
    await nats.provisionProject('flood');
    for (let i = 0; i < 60; i++) await call('flood', i);
    const handled: string[] = [];
    let c: Consumption | undefined;
    try {
      c = await bus.consumeProjects(
        {
          durable: bus.names.toolConsumer('fair'),
          filter: (project) => bus.subjects.toolCallFilter('fair', project),
          ackWaitMs: 30_000,
          maxDeliver: 5,
          maxAckPending: 1_000,
        },
        {
          concurrency: 2,
          ackWaitMs: 30_000,
          retryBaseMs: 50,
          retryMaxMs: 200,
          handler: async (d) => {
            await sleep(20);
            handled.push(new TextDecoder().decode(d.data));
            return { type: 'ack' };
          },
        },
      );
      while (handled.length < 4) await sleep(10);
      // A project made after the start: found through JetStream's stream-created advisory (the
      // listing runs only every 5 s).
      await nats.provisionProject('quiet');
      await call('quiet', 0);
      const sentAt = handled.length;
      const deadline = Date.now() + 10_000;
      while (!handled.includes('quiet-0') && Date.now() < deadline) await sleep(10);
      expect(handled).toContain('quiet-0');
      // Served within a few slots of its arrival, while most of the backlog still waits.
      expect(handled.indexOf('quiet-0') - sentAt).toBeLessThan(10);
      expect(handled.filter((h) => h.startsWith('flood')).length).toBeLessThan(50);
      expect(c.inFlight()).toBeLessThanOrEqual(2);
    } finally {
      await c?.stop(5_000);
    }
  });
});
