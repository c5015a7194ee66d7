// A project's bus call bucket against a real Postgres, from two stores on two pools (two
// instances): takes racing from both never get past the bucket; the project's own limit wins
// over the default the caller passes; a limit of 0 takes nothing and leaves no bucket row.
import { randomUUID } from 'node:crypto';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { migrate } from '../core/migrate.ts';
import { createPool } from '../core/pool.ts';
import { busBucket } from './rate-buckets.ts';
import { createStore, type Store } from '../store.ts';

const logger = pino({ level: 'silent' });
let db: TestPostgres;
let a: Store;
let b: Store;

const storeOn = (url: string) =>
  createStore(
    createPool({ url, max: 8, statementTimeoutMs: 5_000, connectTimeoutMs: 5_000, logger }),
  );

beforeAll(async () => {
  db = await usePostgres();
  a = storeOn(db.url);
  b = storeOn(db.url);
  await migrate({ pool: a.pool, logger });
});
afterAll(async () => {
  await a?.close();
  await b?.close();
  await db?.cleanup();
});

const newProject = async () => {
  const id = `p${randomUUID().slice(0, 8)}`;
  await a.projects.create(id, id);
  return id;
};

describe('bus call buckets', () => {
  it('two instances racing take no more than the bucket holds, in batches', async () => {
    const p = await newProject();
    // 600 a minute: a bucket of 600, batches of 1 asked as 3 at a time.
    const started = Date.now();
    const takes = await Promise.all(
      Array.from({ length: 300 }, (_, i) => (i % 2 ? a : b).rateBuckets.takeBusCalls(p, 600, 3)),
    );
    const ranSec = (Date.now() - started) / 1000;
    const taken = takes.reduce((n, t) => n + t.taken, 0);
    // 600 at the start and 10 a second refilled while the takes ran: the bound grows with the
    // time they took on this host (one clock for the test and Postgres), so load cannot trip it.
    expect(taken).toBeGreaterThanOrEqual(600);
    expect(taken).toBeLessThanOrEqual(600 + Math.ceil(10 * ranSec));
    const refused = takes.filter((t) => t.taken === 0);
    expect(refused.length).toBeGreaterThan(0);
    for (const t of refused) {
      expect(t.perMinute).toBe(600);
      expect(t.waitMs).toBeGreaterThan(0);
      expect(t.waitMs).toBeLessThanOrEqual(100);
    }
  });

  it("the project's own limit wins over the default; 0 takes nothing and keeps no bucket", async () => {
    const own = await newProject();
    await a.projects.updateSettings(own, { quotas: { bus_calls_per_minute: 2 } });
    const first = await a.rateBuckets.takeBusCalls(own, 60_000, 50);
    expect(first).toMatchObject({ perMinute: 2, taken: 2, waitMs: 0 });
    const next = await b.rateBuckets.takeBusCalls(own, 60_000, 50);
    expect(next.taken).toBe(0);
    expect(next.perMinute).toBe(2);
    expect(next.waitMs).toBeGreaterThan(25_000);

    const off = await newProject();
    await a.projects.updateSettings(off, { quotas: { bus_calls_per_minute: 0 } });
    expect(await a.rateBuckets.takeBusCalls(off, 60_000, 50)).toEqual({
      perMinute: 0,
      taken: 0,
      waitMs: 0,
    });
    // The deployment's default off, no project value: off too.
    const plain = await newProject();
    expect((await a.rateBuckets.takeBusCalls(plain, 0, 1)).perMinute).toBe(0);
    const rows = await a.pool.query<{ bucket: string }>(
      'SELECT bucket FROM state.api_rate_buckets WHERE bucket = ANY($1)',
      [[busBucket(own), busBucket(off), busBucket(plain)]],
    );
    expect(rows.rows.map((r) => r.bucket)).toEqual([busBucket(own)]);
  });
});
