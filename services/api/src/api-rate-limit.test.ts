// Requests per key, shared by every api instance: two api instances (each its own Postgres pool
// and NATS connection) on one database draw on one bucket per key; past the limit both answer
// 429 rate_limited with Retry-After, other keys go on, and the admin key has a bucket of its own.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { createClient } from '@toolmesh/client';
import { createPool, createStore, type Store } from '@toolmesh/store';
import { buildApp, type ApiApp } from './app.ts';
import { ADMIN_KEY, expectError, startTestApi, type TestApi } from './test/support.ts';

const PER_KEY = 6;
const ADMIN = 12;

let one: TestApi;
let two: { app: ApiApp; store: Store; nc: NatsConnection };
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  one = await startTestApi({
    CG__API__RATE_LIMIT_PER_MINUTE: String(PER_KEY),
    CG__API__ADMIN_RATE_LIMIT_PER_MINUTE: String(ADMIN),
  });
  const logger = pino({ level: 'silent' });
  const pool = createPool({
    url: one.config.postgres.url,
    max: 4,
    statementTimeoutMs: 10_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  const store = createStore(pool);
  // A second api instance: the api's own NATS user, as a deployment runs every instance.
  const nc = await one.nats.connect('api');
  const client = createClient({ nc, root: one.config.nats.subject_root });
  const app = await buildApp({
    config: one.config,
    store,
    nc,
    client,
    artifacts: one.artifacts,
    logger,
  });
  await app.ready();
  two = { app, store, nc };
  a = await one.createProject();
  b = await one.createProject();
}, 60_000);
afterAll(async () => {
  await two?.app.close();
  await two?.nc.close();
  await two?.store.close();
  await one?.close();
});

const viaOne = (key: string, project: string) =>
  one.request('GET', `/v1/projects/${project}`, { key });
async function viaTwo(key: string, project: string) {
  const res = await two.app.inject({
    method: 'GET',
    url: `/v1/projects/${project}`,
    headers: { authorization: `Bearer ${key}` },
  });
  return {
    status: res.statusCode,
    body: JSON.parse(res.body) as { error?: { code: string; message: string } },
    headers: res.headers,
    raw: res.body,
  };
}

describe('api rate limit per key', () => {
  it('two instances share one bucket per key: past the limit both answer 429 with Retry-After', async () => {
    // Half the key's minute on each instance: all served.
    for (let i = 0; i < PER_KEY / 2; i++) {
      expect((await viaOne(a.key, a.id)).status).toBe(200);
      expect((await viaTwo(a.key, a.id)).status).toBe(200);
    }
    for (const res of [await viaOne(a.key, a.id), await viaTwo(a.key, a.id)]) {
      expectError(res, 429, 'rate_limited');
      const retryAfter = Number(res.headers['retry-after']);
      // The bucket refills one request every 60/PER_KEY seconds.
      expect(retryAfter).toBeGreaterThanOrEqual(1);
      expect(retryAfter).toBeLessThanOrEqual(60 / PER_KEY);
      expect(res.body.error?.message).toContain(`${PER_KEY} requests a minute`);
    }
    // Another key (of another project) has its own bucket.
    expect((await viaOne(b.key, b.id)).status).toBe(200);
    expect((await viaTwo(b.key, b.id)).status).toBe(200);
    // The admin key too, even on the limited key's project.
    expect((await viaOne(ADMIN_KEY, a.id)).status).toBe(200);
  });

  it('the admin key has a limit of its own, shared by the instances', async () => {
    let limited: Awaited<ReturnType<typeof viaTwo>> | undefined;
    // Project creation and the test above spent some of the admin's minute already.
    for (let i = 0; i < ADMIN + 1 && !limited; i++) {
      const res = i % 2 === 0 ? await viaOne(ADMIN_KEY, b.id) : await viaTwo(ADMIN_KEY, b.id);
      if (res.status === 429) limited = res as Awaited<ReturnType<typeof viaTwo>>;
      else expect(res.status, res.raw).toBe(200);
    }
    expect(limited, 'the admin key was never limited').toBeDefined();
    expect(limited?.body.error?.code).toBe('rate_limited');
    expect(limited?.body.error?.message).toContain(`${ADMIN} requests a minute`);
    expect(Number(limited?.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // b's own key is unaffected.
    expect((await viaTwo(b.key, b.id)).status).toBe(200);
  });

  it('buckets are named by key id, never by the key itself', async () => {
    const ids = await Promise.all(
      [a, b].map(async (p) => (await one.store.projects.listKeys(p.id))[0]!.key_id),
    );
    const buckets = await one.store.pool.query<{ bucket: string }>(
      'SELECT bucket FROM state.api_rate_buckets ORDER BY bucket',
    );
    expect(buckets.rows.map((r) => r.bucket).sort()).toEqual(
      ['admin', ...ids.map((id) => `key:${id}`)].sort(),
    );
    for (const r of buckets.rows) {
      for (const secret of [a.key, b.key, ADMIN_KEY]) expect(r.bucket).not.toContain(secret);
    }
  });
});

describe('a busy key', () => {
  // 60,000 a minute: a batch is a tenth of a second's worth, 100, capped at 50.
  let fast: TestApi;
  beforeAll(async () => {
    fast = await startTestApi({ CG__API__RATE_LIMIT_PER_MINUTE: '60000' });
  }, 60_000);
  afterAll(async () => {
    await fast?.close();
  });

  /** The key's bucket row (each test has a project, so a key and a bucket, of its own). */
  const bucketRow = async (p: { id: string }) => {
    const keyId = (await fast.store.projects.listKeys(p.id))[0]!.key_id;
    const { rows } = await fast.store.pool.query<{ tokens: number; refilled_at: Date }>(
      'SELECT tokens, refilled_at FROM state.api_rate_buckets WHERE bucket = $1',
      [`key:${keyId}`],
    );
    return rows[0];
  };

  it('takes its tokens in batches: one statement serves 50 requests', async () => {
    const p = await fast.createProject();
    const get = () => fast.request('GET', `/v1/projects/${p.id}`, { key: p.key });
    expect((await get()).status).toBe(200);
    const first = await bucketRow(p);
    expect(first?.tokens).toBe(60_000 - 50);
    // The rest of the batch is spent in the instance: the bucket's row is not touched.
    for (let i = 0; i < 49; i++) expect((await get()).status).toBe(200);
    expect((await bucketRow(p))?.refilled_at).toEqual(first?.refilled_at);
    // The 51st request takes the next batch.
    expect((await get()).status).toBe(200);
    expect((await bucketRow(p))?.refilled_at.getTime()).toBeGreaterThan(
      first!.refilled_at.getTime(),
    );
  });

  it('takes one batch for requests arriving together, not one each', async () => {
    const p = await fast.createProject();
    // 30 requests at once find no batch in hand; they wait for the one being taken.
    const res = await Promise.all(
      Array.from({ length: 30 }, () => fast.request('GET', `/v1/projects/${p.id}`, { key: p.key })),
    );
    expect(res.map((r) => r.status)).toEqual(Array.from({ length: 30 }, () => 200));
    expect((await bucketRow(p))?.tokens).toBe(60_000 - 50);
  });
});
