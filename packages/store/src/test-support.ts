// The store tests' fixture: a fresh database of their own, migrated, with a store over it and
// the given projects (and agents) created; cleaned up after the file.
import type { Pool } from 'pg';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { pino } from 'pino';
import { afterAll, beforeAll } from 'vitest';
import { migrate } from './core/migrate.ts';
import { createPool } from './core/pool.ts';
import { createStore, type Store } from './store.ts';

export interface StoreFixture {
  store: Store;
  pool: Pool;
}

export function useMigratedStore(
  projects: readonly string[] = [],
  opts: {
    /** Connections of the pool; 1 puts every statement in one session. */
    poolMax?: number;
    /** Agents to create, each as [project, agent id]. */
    agents?: readonly (readonly [string, string])[];
  } = {},
): StoreFixture {
  const fixture = {} as StoreFixture;
  const logger = pino({ level: 'silent' });
  let db: TestPostgres | undefined;
  beforeAll(async () => {
    db = await usePostgres();
    fixture.pool = createPool({
      url: db.url,
      max: opts.poolMax ?? 4,
      statementTimeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      logger,
    });
    await migrate({ pool: fixture.pool, logger });
    fixture.store = createStore(fixture.pool);
    for (const p of projects) {
      await fixture.pool.query(
        `INSERT INTO resource.projects (project_id, name) VALUES ($1, 'p')`,
        [p],
      );
    }
    for (const [p, a] of opts.agents ?? []) {
      await fixture.pool.query(
        `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, $2, 'A')`,
        [p, a],
      );
    }
  });
  afterAll(async () => {
    await fixture.store?.close();
    await db?.cleanup();
  });
  return fixture;
}
