import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { useNats, type TestNats } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from './bus.ts';
import { connectNats } from './connection.ts';
import type { ProjectStreamLimits, StreamSettings } from './provision.ts';

const logger = pino({ level: 'silent' });
const NS_PER_SEC = 1_000_000_000;
const settings: StreamSettings = {
  cmdMaxAgeSec: 86_400,
  evtMaxAgeSec: 7 * 86_400,
  dedupeWindowSec: 120,
  leaseBucketMaxAgeSec: 3_600,
};
const scope = { project: 'proj', channel: 'chan' };
const limits: ProjectStreamLimits = {
  maxBytes: 1_048_576,
  maxMessages: 10_000,
  maxMessageBytes: 65_536,
};

let nats: TestNats;
let nc: NatsConnection;
let jsm: JetStreamManager;
let bus: Bus;

beforeAll(async () => {
  nats = await useNats();
  nc = await connectNats({
    url: nats.url,
    // The admin user (scripts such as reset-nats provision with it): these tests publish both
    // calls and results, which no single service may.
    creds: nats.creds('admin'),
    name: 'provision-test',
    connectTimeoutMs: 5_000,
    reconnectWaitMs: 500,
    maxReconnectAttempts: 3,
    logger,
  });
  jsm = await jetstreamManager(nc);
  bus = await createBus({ nc, root: nats.root, logger });
});

afterAll(async () => {
  await bus?.close();
  await nats?.cleanup();
});

describe('provision', () => {
  it('refuses leases before it ran', () => {
    expect(() => bus.leases()).toThrow(/provision/);
  });

  it('refuses project streams before it ran', async () => {
    await expect(bus.provisionProject(scope.project, limits)).rejects.toThrow(/provision/);
  });

  it("creates a project's command stream with its subjects, max age, window and limits", async () => {
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
    const cmd = await jsm.streams.info(bus.names.projectCommandStream(scope.project));
    expect(cmd.config.subjects).toEqual([`${nats.root}.v1.proj.*.cmd.>`]);
    expect(cmd.config.max_age).toBe(86_400 * NS_PER_SEC);
    expect(cmd.config.duplicate_window).toBe(120 * NS_PER_SEC);
    expect(cmd.config).toMatchObject({
      max_bytes: 1_048_576,
      max_msgs: 10_000,
      max_msg_size: 65_536,
      discard: 'new',
    });
  });

  it('creates the event stream with its subjects, max age and duplicate window', async () => {
    await bus.provision(settings);
    const evt = await jsm.streams.info(bus.names.eventStream);
    expect(evt.config.subjects).toEqual([`${nats.root}.v1.*.*.evt.>`]);
    expect(evt.config.max_age).toBe(7 * 86_400 * NS_PER_SEC);
    expect(evt.config.duplicate_window).toBe(120 * NS_PER_SEC);
  });

  it('creates the lease bucket with its max age', async () => {
    await bus.provision(settings);
    const bucket = await jsm.streams.info(`KV_${bus.names.leaseBucket}`);
    expect(bucket.config.max_age).toBe(3_600 * NS_PER_SEC);
    expect(bucket.config.max_msgs_per_subject).toBe(1);
    expect(bus.leases()).toBeDefined();
  });

  it('is idempotent: running it again keeps the streams and their messages', async () => {
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
    const cmd = bus.names.projectCommandStream(scope.project);
    const before = await jsm.streams.info(cmd);
    await bus.publish(bus.subjects.cancel(scope), new Uint8Array([1]));
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
    const after = await jsm.streams.info(cmd);
    expect(after.created).toBe(before.created);
    expect(after.config).toEqual(before.config);
    expect(after.state.messages).toBe(before.state.messages + 1);
  });

  it('runs from several processes at once on a fresh root', async () => {
    const fresh = await useNats();
    try {
      const buses = await Promise.all(
        [1, 2, 3].map(() => createBus({ nc, root: fresh.root, logger })),
      );
      await Promise.all(buses.map((b) => b.provision(settings)));
      const names = buses[0]!.names;
      await Promise.all(buses.map((b) => b.provisionProject('p1', limits)));
      expect((await jsm.streams.info(names.projectCommandStream('p1'))).config.max_age).toBe(
        86_400 * NS_PER_SEC,
      );
      expect((await jsm.streams.info(names.eventStream)).config.max_age).toBe(
        7 * 86_400 * NS_PER_SEC,
      );
      expect((await jsm.streams.info(`KV_${names.leaseBucket}`)).config.max_age).toBe(
        3_600 * NS_PER_SEC,
      );
    } finally {
      await fresh.cleanup();
    }
  });

  it('updates changed settings in place', async () => {
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
    const stream = bus.names.projectCommandStream(scope.project);
    const before = await jsm.streams.info(stream);
    const changed = {
      cmdMaxAgeSec: 7_200,
      evtMaxAgeSec: 14_400,
      dedupeWindowSec: 30,
      leaseBucketMaxAgeSec: 900,
    };
    await bus.provision(changed);
    await bus.provisionProject(scope.project, { ...limits, maxMessages: 20_000 });
    const cmd = await jsm.streams.info(stream);
    expect(cmd.created).toBe(before.created);
    expect(cmd.state.messages).toBe(before.state.messages);
    expect([cmd.config.max_age, cmd.config.duplicate_window, cmd.config.max_msgs]).toEqual([
      7_200 * NS_PER_SEC,
      30 * NS_PER_SEC,
      20_000,
    ]);
    expect((await jsm.streams.info(bus.names.eventStream)).config.max_age).toBe(
      14_400 * NS_PER_SEC,
    );
    expect((await jsm.streams.info(`KV_${bus.names.leaseBucket}`)).config.max_age).toBe(
      900 * NS_PER_SEC,
    );
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
  });

  it('a project stream at a limit refuses the publish as quota_exceeded, storing nothing', async () => {
    await bus.provision(settings);
    const project = 'full';
    await bus.provisionProject(project, { maxBytes: 4_096, maxMessages: 3, maxMessageBytes: 512 });
    const stream = bus.names.projectCommandStream(project);
    const subject = bus.subjects.cancel({ project, channel: 'c' });
    const big = await bus.publish(subject, new Uint8Array(600)).catch((e: unknown) => e);
    expect(big).toMatchObject({
      code: 'quota_exceeded',
      retryable: false,
      details: { quota: 'bus_max_message_bytes', project },
    });
    for (let i = 0; i < 3; i++) await bus.publish(subject, new Uint8Array([i]));
    const fourth = await bus.publish(subject, new Uint8Array([4])).catch((e: unknown) => e);
    expect(fourth).toMatchObject({
      code: 'quota_exceeded',
      details: { quota: 'bus_max_messages' },
    });
    // Discard new: what was accepted stays; the refused message is nowhere.
    const info = await jsm.streams.info(stream);
    expect([info.state.messages, info.state.first_seq, info.state.last_seq]).toEqual([3, 1, 3]);
    await bus.provisionProject(project, { maxBytes: 500, maxMessages: 100, maxMessageBytes: 512 });
    const bytes = await bus.publish(subject, new Uint8Array(400)).catch((e: unknown) => e);
    expect(bytes).toMatchObject({ code: 'quota_exceeded', details: { quota: 'bus_max_bytes' } });
    // Another project's stream is untouched by this one's being full.
    await bus.provisionProject('roomy', limits);
    const ok = await bus.publish(
      bus.subjects.cancel({ project: 'roomy', channel: 'c' }),
      new Uint8Array(400),
    );
    expect(ok.duplicate).toBe(false);
  });
});

describe('publish', () => {
  beforeAll(async () => {
    await bus.provision(settings);
    await bus.provisionProject(scope.project, limits);
  });

  it('drops a duplicate with the same message id inside the window', async () => {
    await bus.provision(settings);
    const subject = bus.subjects.toolCall({ ...scope, target: 'skills', tool: 'run_cmd' });
    const first = await bus.publish(subject, new TextEncoder().encode('{"a":1}'), {
      msgId: 'proj/call-1',
    });
    const second = await bus.publish(subject, new TextEncoder().encode('{"a":2}'), {
      msgId: 'proj/call-1',
    });
    expect(first.duplicate).toBe(false);
    expect(second).toEqual({ seq: first.seq, duplicate: true });
    const stored = await jsm.streams.getMessage(bus.names.projectCommandStream(scope.project), {
      seq: first.seq,
    });
    expect(stored?.json()).toEqual({ a: 1 });
    expect(stored?.header.get('Nats-Msg-Id')).toMatch(/^proj\/call-1\/[A-Za-z0-9_-]{22}$/);
  });

  it('keeps messages with different ids, or without one', async () => {
    await bus.provision(settings);
    const subject = bus.subjects.toolResult({ ...scope, target: 'skills' });
    const acks = [
      await bus.publish(subject, new Uint8Array(), { msgId: 'proj/result/a' }),
      await bus.publish(subject, new Uint8Array(), { msgId: 'proj/result/b' }),
      await bus.publish(subject, new Uint8Array()),
      await bus.publish(subject, new Uint8Array()),
    ];
    expect(acks.map((a) => a.duplicate)).toEqual([false, false, false, false]);
    expect(new Set(acks.map((a) => a.seq)).size).toBe(4);
  });

  it('sends the given headers along', async () => {
    await bus.provision(settings);
    const subject = bus.subjects.cancel(scope);
    const ack = await bus.publish(subject, new Uint8Array(), {
      headers: { 'CG-Trace-Id': 'trace-1', 'CG-Turn-Id': undefined },
    });
    const stored = await jsm.streams.getMessage(bus.names.projectCommandStream(scope.project), {
      seq: ack.seq,
    });
    expect(stored?.header.get('CG-Trace-Id')).toBe('trace-1');
    expect(stored?.header.has('CG-Turn-Id')).toBe(false);
  });

  it('to a subject no stream holds fails as unavailable', async () => {
    const err: unknown = await bus
      .publish(`${nats.root}.nowhere`, new Uint8Array())
      .catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'unavailable', retryable: true });
  });
});
