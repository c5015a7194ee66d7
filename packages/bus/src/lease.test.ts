import { setTimeout as sleep } from 'node:timers/promises';
import type { NatsConnection } from '@nats-io/transport-node';
import { useNats, type TestNats } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus, type Bus } from './bus.ts';
import { connectNats } from './connection.ts';
import type { Lease, LeaseStore } from './lease.ts';

const logger = pino({ level: 'silent' });
let nats: TestNats;
let nc: NatsConnection;
let bus: Bus;
let leases: LeaseStore;
let n = 0;
/** A fresh lease key per test, so tests never see each other's leases. */
const freshKey = (): string => bus.names.leaseKey('proj', `call-${++n}`);

function acquired(r: Awaited<ReturnType<LeaseStore['acquire']>>): Lease {
  if (!r.acquired) throw new Error(`expected to acquire, got ${JSON.stringify(r)}`);
  return r.lease;
}

beforeAll(async () => {
  nats = await useNats();
  nc = await connectNats({
    url: nats.url,
    // As the tool services run: the skills service's own NATS user.
    creds: nats.creds('skills'),
    name: 'lease-test',
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
  leases = bus.leases();
});

afterAll(async () => {
  await bus?.close();
  await nats?.cleanup();
});

describe('leases', () => {
  it('are acquired by creating the key', async () => {
    const key = freshKey();
    const before = Date.now();
    const lease = acquired(await leases.acquire(key, 'owner-a', 10_000));
    expect(lease.key).toBe(key);
    expect(lease.takeover).toBe(false);
    expect(lease.record).toMatchObject({ owner: 'owner-a', state: 'running' });
    expect(lease.record.expires_at).toBeGreaterThanOrEqual(before + 10_000);
    expect(await leases.get(key)).toEqual(lease.record);
  });

  it('held by someone else are reported running with the time left', async () => {
    const key = freshKey();
    acquired(await leases.acquire(key, 'owner-a', 10_000));
    const second = await leases.acquire(key, 'owner-b', 10_000);
    expect(second).toMatchObject({
      acquired: false,
      state: 'running',
      holder: { owner: 'owner-a' },
    });
    if (second.acquired || second.state !== 'running') throw new Error('unreachable');
    expect(second.expiresInMs).toBeGreaterThan(0);
    expect(second.expiresInMs).toBeLessThanOrEqual(10_000);
    expect((await leases.get(key))?.owner).toBe('owner-a');
  });

  it('that expired are taken over, and the takeover is reported', async () => {
    const key = freshKey();
    acquired(await leases.acquire(key, 'crashed', 300));
    await sleep(400);
    const lease = acquired(await leases.acquire(key, 'rescuer', 10_000));
    expect(lease.takeover).toBe(true);
    expect(lease.record).toMatchObject({ owner: 'rescuer', state: 'running' });
    expect((await leases.get(key))?.owner).toBe('rescuer');
  });

  it('that expired go to exactly one of several concurrent takeovers', async () => {
    const keys = [freshKey(), freshKey(), freshKey(), freshKey()];
    for (const key of keys) acquired(await leases.acquire(key, 'crashed', 300));
    await sleep(400);
    for (const key of keys) {
      const results = await Promise.all(
        ['b', 'c', 'd'].map((o) => leases.acquire(key, `owner-${o}`, 10_000)),
      );
      const winners = results.filter((r) => r.acquired);
      expect(winners).toHaveLength(1);
      const winner = acquired(winners[0]!);
      expect(winner.takeover).toBe(true);
      for (const loser of results.filter((r) => !r.acquired)) {
        expect(loser).toMatchObject({ state: 'running', holder: { owner: winner.record.owner } });
      }
      expect((await leases.get(key))?.owner).toBe(winner.record.owner);
    }
  });

  it('renewed stay held past their first expiry', async () => {
    const key = freshKey();
    const lease = acquired(await leases.acquire(key, 'owner-a', 1_000));
    const first = lease.record.expires_at;
    await sleep(500);
    expect(await lease.renew()).toBe(true);
    expect(lease.record.expires_at).toBeGreaterThan(first);
    expect((await leases.get(key))?.expires_at).toBe(lease.record.expires_at);
    await sleep(700); // past the first expiry, inside the renewed one
    expect(await leases.acquire(key, 'owner-b', 1_000)).toMatchObject({
      acquired: false,
      state: 'running',
    });
  });

  it('taken over by someone else can no longer be renewed, completed or released', async () => {
    const key = freshKey();
    const stalled = acquired(await leases.acquire(key, 'stalled', 300));
    await sleep(400);
    const rescuer = acquired(await leases.acquire(key, 'rescuer', 10_000));
    expect(await stalled.renew()).toBe(false);
    expect(await stalled.complete('11111111-1111-4111-8111-111111111111')).toBe(false);
    await stalled.release();
    expect(await leases.get(key)).toEqual(rescuer.record);
    expect(await rescuer.renew()).toBe(true);
  });

  it('completed are reported done with the card id, even after their expiry', async () => {
    const key = freshKey();
    const cardId = '0b7f7f2e-3c47-4b8e-9a55-6f3c1d2e4a10';
    const lease = acquired(await leases.acquire(key, 'owner-a', 300));
    expect(await lease.complete(cardId)).toBe(true);
    expect(lease.record).toMatchObject({ state: 'done', card_id: cardId });
    await sleep(400);
    const later = await leases.acquire(key, 'owner-b', 10_000);
    expect(later).toEqual({
      acquired: false,
      state: 'done',
      holder: {
        owner: 'owner-a',
        state: 'done',
        card_id: cardId,
        expires_at: lease.record.expires_at,
      },
    });
  });

  it('released can be acquired again at once', async () => {
    const key = freshKey();
    const lease = acquired(await leases.acquire(key, 'owner-a', 10_000));
    await lease.renew();
    await lease.release();
    expect(await leases.get(key)).toBeUndefined();
    const again = acquired(await leases.acquire(key, 'owner-b', 10_000));
    expect(again.takeover).toBe(false);
    expect(again.record.owner).toBe('owner-b');
    // And released a second time, by the new owner, after it renewed.
    expect(await again.renew()).toBe(true);
    await again.release();
    expect(acquired(await leases.acquire(key, 'owner-c', 10_000)).record.owner).toBe('owner-c');
  });

  it('of different projects are independent', async () => {
    const a = bus.names.leaseKey('project-a', 'same-call');
    const b = bus.names.leaseKey('project-b', 'same-call');
    acquired(await leases.acquire(a, 'owner-a', 10_000));
    acquired(await leases.acquire(b, 'owner-b', 10_000));
  });

  it('that nobody took are absent', async () => {
    expect(await leases.get(freshKey())).toBeUndefined();
  });
});

describe('cancel tombstones', () => {
  it('of a call nobody holds keep it from being acquired, however late it comes', async () => {
    const key = freshKey();
    expect(await leases.cancel(key, 'canceled: not wanted')).toBe('tombstoned');
    const r = await leases.acquire(key, 'owner-a', 10_000);
    expect(r).toMatchObject({
      acquired: false,
      state: 'canceled',
      holder: { state: 'canceled', reason: 'canceled: not wanted' },
    });
    // A second cancel finds the first one's tombstone.
    expect(await leases.cancel(key, 'again')).toBe('already');
  });

  it('leave a live owner alone, and replace a lapsed one', async () => {
    const live = freshKey();
    acquired(await leases.acquire(live, 'owner-a', 10_000));
    expect(await leases.cancel(live, 'stop')).toBe('running');
    expect((await leases.get(live))?.state).toBe('running');

    const lapsed = freshKey();
    const lease = acquired(await leases.acquire(lapsed, 'owner-a', 50));
    await sleep(100);
    expect(await leases.cancel(lapsed, 'stop')).toBe('tombstoned');
    // The stalled owner lost its lease, and a redelivery does not take it over.
    expect(await lease.renew()).toBe(false);
    expect((await leases.acquire(lapsed, 'owner-b', 10_000)).acquired).toBe(false);
  });

  it('of one project do not touch the same call id in another', async () => {
    const mine = bus.names.leaseKey('project-c', 'shared-id');
    const theirs = bus.names.leaseKey('project-d', 'shared-id');
    expect(await leases.cancel(theirs, 'stop')).toBe('tombstoned');
    expect((await leases.acquire(mine, 'owner-a', 10_000)).acquired).toBe(true);
  });
});
