import { setTimeout as sleep } from 'node:timers/promises';
import { jetstreamManager, type ConsumerInfo, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { useNats, type TestNats } from '@toolmesh/testing';
import { pino } from 'pino';
import { ProtocolError } from '@toolmesh/protocol';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from './bus.ts';
import { connectNats } from './connection.ts';
import type { ConsumeOptions, Consumption, Delivery, Disposition } from './consume.ts';

const logger = pino({ level: 'silent' });
const scope = { project: 'proj', channel: 'chan' };
let nats: TestNats;
let nc: NatsConnection;
let jsm: JetStreamManager;
let bus: Bus;
let running: Consumption[] = [];
let n = 0;

beforeAll(async () => {
  nats = await useNats();
  nc = await connectNats({
    url: nats.url,
    // The api's own NATS user: it provisions, publishes calls and consumes (as the services do).
    creds: nats.creds('api'),
    name: 'consume-test',
    connectTimeoutMs: 5_000,
    reconnectWaitMs: 500,
    maxReconnectAttempts: 3,
    logger,
  });
  jsm = await jetstreamManager(nc);
  bus = await createBus({ nc, root: nats.root, logger });
  await bus.provision({
    cmdMaxAgeSec: 3600,
    evtMaxAgeSec: 3600,
    dedupeWindowSec: 60,
    leaseBucketMaxAgeSec: 600,
  });
  await nats.provisionProject(scope.project);
});

afterEach(async () => {
  await Promise.all(running.map((c) => c.stop(5_000)));
  running = [];
});

afterAll(async () => {
  await bus?.close();
  await nats?.cleanup();
});

/** A target of its own per test: its own subjects and its own durable consumer. */
function freshTarget() {
  const target = `target${++n}`;
  const durable = bus.names.toolConsumer(target);
  const subject = bus.subjects.toolCall({ ...scope, target, tool: 'work' });
  return {
    subject,
    publish: (body: string, headers?: Record<string, string>) =>
      bus.publish(subject, new TextEncoder().encode(body), headers ? { headers } : {}),
    consume: async (
      opts: Partial<Omit<ConsumeOptions, 'logger'>> & Pick<ConsumeOptions, 'handler'>,
    ) => {
      const ackWaitMs = opts.ackWaitMs ?? 30_000;
      const c = await bus.consume(
        {
          durable,
          stream: bus.names.projectCommandStream(scope.project),
          filter: bus.subjects.toolCallFilter(target, scope.project),
          ackWaitMs,
          maxDeliver: 10,
          maxAckPending: 100,
        },
        { concurrency: 4, ackWaitMs, retryBaseMs: 50, retryMaxMs: 200, ...opts },
      );
      running.push(c);
      return c;
    },
    info: (): Promise<ConsumerInfo> =>
      jsm.consumers.info(bus.names.projectCommandStream(scope.project), durable),
  };
}

async function waitFor(
  what: string,
  cond: () => boolean | Promise<boolean>,
  timeoutMs = 15_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await cond())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

/** Everything delivered has been acked (or termed), and nothing is left to deliver. */
const settled = async (info: () => Promise<ConsumerInfo>): Promise<boolean> => {
  const i = await info();
  return i.num_ack_pending === 0 && i.num_pending === 0;
};

const text = (d: Delivery): string => new TextDecoder().decode(d.data);
const reply = (d: Disposition): Promise<Disposition> => Promise.resolve(d);

describe('consume', () => {
  it('runs no more handlers at once than its concurrency, and acks every message', async () => {
    const t = freshTarget();
    for (let i = 0; i < 10; i++) await t.publish(`m${i}`);
    let active = 0;
    let maxActive = 0;
    const handled: string[] = [];
    const c = await t.consume({
      concurrency: 3,
      handler: async (d) => {
        active++;
        maxActive = Math.max(maxActive, active);
        await sleep(150);
        active--;
        handled.push(text(d));
        return { type: 'ack' };
      },
    });
    await waitFor('10 handled', () => handled.length >= 10);
    await waitFor('all acked', () => settled(t.info));
    expect(maxActive).toBe(3);
    expect(handled.sort()).toEqual(Array.from({ length: 10 }, (_, i) => `m${i}`).sort());
    expect(c.inFlight()).toBe(0);
    expect((await t.info()).num_redelivered).toBe(0);
  });

  it('hands the handler the subject, data, sequence, delivery count and headers', async () => {
    const t = freshTarget();
    const ack = await t.publish('{"x":1}', { 'CG-Tool-Call-Id': 'call-1' });
    const seen: Delivery[] = [];
    await t.consume({ handler: (d) => (seen.push(d), reply({ type: 'ack' })) });
    await waitFor('one delivery', () => seen.length === 1);
    const d = seen[0]!;
    expect([d.subject, text(d), d.streamSeq, d.deliveryCount]).toEqual([
      t.subject,
      '{"x":1}',
      ack.seq,
      1,
    ]);
    expect(d.header('CG-Tool-Call-Id')).toBe('call-1');
    expect(d.header('CG-Agent-Id')).toBeUndefined();
  });

  it('redelivers a message the handler naks, after the delay', async () => {
    const t = freshTarget();
    await t.publish('again');
    const deliveries: Array<{ count: number; at: number }> = [];
    await t.consume({
      handler: (d) => {
        deliveries.push({ count: d.deliveryCount, at: Date.now() });
        return reply(d.deliveryCount === 1 ? { type: 'nak', delayMs: 300 } : { type: 'ack' });
      },
    });
    await waitFor('redelivery', () => deliveries.length === 2);
    await waitFor('acked', () => settled(t.info));
    expect(deliveries.map((d) => d.count)).toEqual([1, 2]);
    expect(deliveries[1]!.at - deliveries[0]!.at).toBeGreaterThanOrEqual(250);
  });

  it('naks and redelivers a message whose handler throws', async () => {
    const t = freshTarget();
    await t.publish('boom');
    const counts: number[] = [];
    await t.consume({
      handler: async (d) => {
        counts.push(d.deliveryCount);
        await sleep(20);
        if (d.deliveryCount === 1) throw new Error('database is down');
        return { type: 'ack' };
      },
    });
    await waitFor('redelivery', () => counts.length === 2);
    await waitFor('acked', () => settled(t.info));
    expect(counts).toEqual([1, 2]);
  });

  it('terminates at the first delivery a message no redelivery can cure', async () => {
    const t = freshTarget();
    // What a handler meets on a call nested 10,000 deep: stringifying it overflows the stack.
    let deep: unknown = 1;
    for (let i = 0; i < 10_000; i++) deep = [deep];
    await t.publish('deep');
    await t.publish('unparsable');
    await t.publish('refused');
    const counts = new Map<string, number[]>();
    await t.consume({
      handler: async (d) => {
        counts.set(text(d), [...(counts.get(text(d)) ?? []), d.deliveryCount]);
        await sleep(5);
        if (text(d) === 'deep') JSON.stringify(deep);
        if (text(d) === 'unparsable') JSON.parse(text(d));
        throw new ProtocolError('invalid_message', 'not a tool call');
      },
    });
    await waitFor('all three handled', () => counts.size === 3);
    await sleep(1_000); // retry_base_ms is 50: a nak'ed message would be back by now
    expect(Object.fromEntries(counts)).toEqual({ deep: [1], unparsable: [1], refused: [1] });
    const info = await t.info();
    expect([info.num_ack_pending, info.num_pending, info.num_redelivered]).toEqual([0, 0, 0]);
  });

  it('does not redeliver a termed message', async () => {
    const t = freshTarget();
    await t.publish('poison');
    await t.publish('fine');
    const seen: string[] = [];
    await t.consume({
      ackWaitMs: 500,
      handler: (d) => {
        seen.push(text(d));
        return reply(
          text(d) === 'poison' ? { type: 'term', reason: 'bad input' } : { type: 'ack' },
        );
      },
    });
    await waitFor('both handled', () => seen.length === 2);
    await sleep(1_500); // three ack waits: a message left unacked would be back by now
    expect(seen.sort()).toEqual(['fine', 'poison']);
    const info = await t.info();
    expect([info.num_ack_pending, info.num_pending, info.num_redelivered]).toEqual([0, 0, 0]);
  });

  it('keeps a handler that outlives the ack wait from being redelivered meanwhile', async () => {
    const t = freshTarget();
    await t.publish('slow');
    const counts: number[] = [];
    let done = false;
    await t.consume({
      ackWaitMs: 1_000,
      handler: async (d) => {
        counts.push(d.deliveryCount);
        await sleep(2_500);
        done = true;
        return { type: 'ack' };
      },
    });
    await waitFor('handler done', () => done);
    await waitFor('acked', () => settled(t.info));
    await sleep(1_200); // past one more ack wait
    expect(counts).toEqual([1]);
    expect((await t.info()).num_redelivered).toBe(0);
  });

  it('keeps messages waiting for a free slot from being redelivered meanwhile', async () => {
    const t = freshTarget();
    for (const body of ['a', 'b', 'c']) await t.publish(body);
    const seen: Array<[string, number]> = [];
    await t.consume({
      concurrency: 1,
      ackWaitMs: 1_000,
      handler: async (d) => {
        seen.push([text(d), d.deliveryCount]);
        await sleep(1_200);
        return { type: 'ack' };
      },
    });
    await waitFor(
      'three handled and acked',
      async () => seen.length >= 3 && (await settled(t.info)),
    );
    await sleep(1_200);
    expect(seen).toEqual([
      ['a', 1],
      ['b', 1],
      ['c', 1],
    ]);
  });

  it('stop() waits for the handlers in flight, and pulls nothing after', async () => {
    const t = freshTarget();
    await t.publish('first');
    let started = false;
    let finished = false;
    const seen: string[] = [];
    const c = await t.consume({
      handler: async (d) => {
        seen.push(text(d));
        started = true;
        await sleep(500);
        finished = true;
        return { type: 'ack' };
      },
    });
    await waitFor('handler started', () => started);
    expect(c.inFlight()).toBe(1);
    await c.stop();
    expect(finished).toBe(true);
    expect(c.inFlight()).toBe(0);
    await waitFor('acked', () => settled(t.info));
    await t.publish('second');
    await sleep(300);
    expect(seen).toEqual(['first']);
    expect((await t.info()).num_pending).toBe(1);
  });
});
