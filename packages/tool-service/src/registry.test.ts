// The registry cache against real NATS and Postgres: a hit is served from memory, a change event
// drops the entry at once, a missed event heals after the TTL, and an unknown tool is cached as
// unknown until the event of its creation.
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createBus, type Bus } from '@toolmesh/bus';
import { encodeMessage } from '@toolmesh/protocol';
import { createPool, createStore, migrate, ToolOrigin, type Store } from '@toolmesh/store';
import { useNats, usePostgres, type TestNats, type TestPostgres } from '@toolmesh/testing';
import { createRegistry, type Registry } from './registry.ts';

const logger = pino({ level: 'silent' });
let nats: TestNats;
let db: TestPostgres;
let nc: NatsConnection;
let bus: Bus;
let store: Store;
let registry: Registry;
let slow: Registry;

beforeAll(async () => {
  nats = await useNats();
  db = await usePostgres();
  const pool = createPool({
    url: db.url,
    max: 2,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  store = createStore(pool);
  // The tools service's user: it both announces registry changes and listens to them.
  nc = await nats.connect('tools');
  bus = await createBus({ nc, root: nats.root, logger });
  // One that only events can refresh (a TTL far away), one whose TTL is short.
  registry = createRegistry({ store, bus, ttlMs: 3_600_000, logger });
  slow = createRegistry({ store, bus, ttlMs: 200, logger });
  await nc.flush();
  await store.projects.create('p1', 'p1');
});
afterAll(async () => {
  registry?.close();
  slow?.close();
  await nc?.close();
  await store?.close();
  await nats?.cleanup();
  await db?.cleanup();
});

const changed = async (tools: string[]) => {
  nc.publish(
    bus.subjects.registryChanged('p1'),
    encodeMessage('registry_changed', { v: 1, change: 'updated', tools }),
  );
  await nc.flush();
};

async function eventually<T>(read: () => Promise<T>, ok: (v: T) => boolean): Promise<T> {
  const deadline = Date.now() + 10_000;
  for (;;) {
    const v = await read();
    if (ok(v)) return v;
    if (Date.now() > deadline) throw new Error(`still ${JSON.stringify(v)}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

it('serves hits from memory until an event or the TTL drops them', async () => {
  await store.tools.create('p1', {
    name: 'web.get',
    target: 'web',
    description: 'x',
    category: 'general',
    parameters: { type: 'object' },
    origin: ToolOrigin.http,
    spec: { method: 'GET', url: 'https://example.com/' },
  });
  expect((await registry.get('p1', 'web.get'))?.enabled).toBe(true);
  expect((await slow.get('p1', 'web.get'))?.enabled).toBe(true);
  await store.tools.update('p1', 'web.get', { enabled: false }); // no event
  expect((await registry.get('p1', 'web.get'))?.enabled).toBe(true); // still the cached row
  await eventually(
    () => slow.get('p1', 'web.get'),
    (t) => t?.enabled === false,
  ); // the TTL
  await changed(['web.get']);
  await eventually(
    () => registry.get('p1', 'web.get'),
    (t) => t?.enabled === false,
  ); // the event
});

it('caches unknown tools as unknown until the event of their creation', async () => {
  expect(await registry.get('p1', 'web.later')).toBeUndefined();
  await store.tools.create('p1', {
    name: 'web.later',
    target: 'web',
    description: 'x',
    category: 'general',
    parameters: { type: 'object' },
    origin: ToolOrigin.http,
    spec: { method: 'GET', url: 'https://example.com/' },
  });
  expect(await registry.get('p1', 'web.later')).toBeUndefined();
  await changed([]); // every tool of the project
  const t = await eventually(
    () => registry.get('p1', 'web.later'),
    (v) => v !== undefined,
  );
  expect(t).toMatchObject({ project: 'p1', name: 'web.later', origin: 'http' });
});
