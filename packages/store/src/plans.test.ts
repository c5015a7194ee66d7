// The hottest statements keep the plan Postgres cached for them: a statement planned anew at
// every execution costs its planning each time (measured: 0.6 ms for the result-card batch
// beside 0.56 ms of execution). Postgres plans a prepared statement for its first five runs,
// then keeps a generic plan unless those looked cheaper; a parameter whose size the planner can
// see (a text[] of one element) made them look cheaper every time.
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { migrate } from './migrate.ts';
import { createPool } from './pool.ts';
import { createStore, type Store } from './store.ts';

const P = 'proj';
let db: TestPostgres;
let store: Store;

beforeAll(async () => {
  db = await usePostgres();
  const logger = pino({ level: 'silent' });
  // One connection: the statements and the look at its prepared statements share the session.
  const pool = createPool({
    url: db.url,
    max: 1,
    statementTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  store = createStore(pool);
  await pool.query(`INSERT INTO resource.projects (project_id, name) VALUES ($1, 'p')`, [P]);
});
afterAll(async () => {
  await store?.close();
  await db?.cleanup();
});

const plans = async (name: string) => {
  const { rows } = await store.pool.query<{ generic_plans: string; custom_plans: string }>(
    'SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE name = $1',
    [name],
  );
  expect(rows).toHaveLength(1);
  return { generic: Number(rows[0]!.generic_plans), custom: Number(rows[0]!.custom_plans) };
};

describe('cached plans', () => {
  it('the result-card batch and the start of call deadlines are not planned at every run', async () => {
    for (let i = 0; i < 12; i++) {
      const recorded = await store.results.record({
        projectId: P,
        channel: 'main',
        toolCallId: `call-${i}`,
        toolName: 'builtin.echo',
        target: 'builtin',
        author: 'test',
        instanceId: 'test',
        content: { status: 'succeeded', result: { i }, duration_ms: 1 },
      });
      expect(recorded.inserted).toBe(true);
      await store.turns.markPublished(P, [`call-${i}`, `other-${i}`]);
    }
    for (const name of ['results_record', 'turns_mark_published']) {
      const { generic, custom } = await plans(name);
      expect({ name, custom: custom <= 5 }).toEqual({ name, custom: true });
      expect(generic + custom).toBe(12);
    }
  });
});
