// The sandbox-reaper's retention loop against a real Postgres: with executions kept for ever (the
// default), it still forgets Idempotency-Key records past their age, and only those.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPool, createStore, migrate, type Store } from '@toolmesh/store';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { startRetention } from '../services/sandbox-reaper/src/retention.ts';

const logger = pino({ level: 'silent' });
let db: TestPostgres;
let store: Store;

beforeAll(async () => {
  db = await usePostgres();
  const pool = createPool({
    url: db.url,
    max: 4,
    statementTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  store = createStore(pool);
});
afterAll(async () => {
  await store?.close();
  await db?.cleanup();
});

describe('retention', () => {
  it('deletes idempotency keys past their age even when executions are kept', async () => {
    await store.pool.query(
      `INSERT INTO state.idempotency_keys (project_id, idem_key, fingerprint, tool_call_id, created_at)
       VALUES ('p', 'old-1', 'f', 'c1', now() - interval '25 hours'),
              ('q', 'old-2', 'f', 'c2', now() - interval '30 hours'),
              ('p', 'recent', 'f', 'c3', now() - interval '23 hours')`,
    );
    const loop = startRetention(
      store,
      {
        executions_max_age_hours: 0,
        idempotency_keys_max_age_hours: 24,
        batch_size: 1,
        interval_sec: 3600,
      },
      logger,
      86_400,
    );
    try {
      const keys = async () =>
        (
          await store.pool.query<{ idem_key: string }>(
            'SELECT idem_key FROM state.idempotency_keys ORDER BY idem_key',
          )
        ).rows.map((r) => r.idem_key);
      const deadline = Date.now() + 10_000;
      while ((await keys()).length > 1 && Date.now() < deadline) {
        await new Promise((r) => setTimeout(r, 25));
      }
      expect(await keys()).toEqual(['recent']);
      expect(await loop.runPass()).toMatchObject({ executions: 0, idempotency_keys: 0 });
    } finally {
      await loop.stop();
    }
  });
});
