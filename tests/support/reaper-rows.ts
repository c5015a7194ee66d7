// What the reaper tests share: a migrated database and a store of their own, real local
// sandboxes with registry rows in chosen states, and a provider wrapper that counts destroy
// calls per sandbox id (and can fail some) while delegating to the real one.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { createLocalSandboxProvider, type LocalSandboxProvider } from '@toolmesh/sandbox';
import { createPool, createStore, migrate, type Store } from '@toolmesh/store';
import { usePostgres } from '@toolmesh/testing';
import type { Destroyers, SandboxDestroyer } from '../../services/sandbox-reaper/src/providers.ts';

export interface ReaperWorld {
  dbUrl: string;
  store: Store;
  rootDir: string;
  provider: LocalSandboxProvider;
  /** Creates `n` real sandboxes and their rows; `sql` sets the rows' columns (expiries, locks). */
  sandboxes(n: number, sql: string, project?: string): Promise<string[]>;
  states(ids: readonly string[]): Promise<Map<string, string>>;
  close(): Promise<void>;
}

export async function startReaperWorld(): Promise<ReaperWorld> {
  const db = await usePostgres();
  const logger = pino({ level: 'silent' });
  const pool = createPool({
    url: db.url,
    max: 8,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  await migrate({ pool, logger });
  const store = createStore(pool);
  const rootDir = await mkdtemp(join(tmpdir(), 'toolmesh-reaper-'));
  const provider = await createLocalSandboxProvider({ rootDir });
  let n = 0;
  return {
    dbUrl: db.url,
    store,
    rootDir: provider.rootDir,
    provider,
    sandboxes: async (count, sql, project = 'p') => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const session = `s${n++}`;
        const sb = await provider.create({ key: { project, agent: 'a', session } });
        ids.push(sb.id);
      }
      await pool.query(
        `INSERT INTO state.sandboxes (sandbox_id, provider, project_id, agent_id, session_key,
           idle_expires_at, hard_expires_at)
         SELECT id, 'local', $2, 'a', 'a/' || id, now() + interval '1 hour', now() + interval '2 hours'
         FROM unnest($1::text[]) AS id`,
        [ids, project],
      );
      await pool.query(`UPDATE state.sandboxes SET ${sql} WHERE sandbox_id = ANY($1)`, [ids]);
      return ids;
    },
    states: async (ids) => {
      const res = await pool.query<{ sandbox_id: string; state: string }>(
        'SELECT sandbox_id, state FROM state.sandboxes WHERE sandbox_id = ANY($1)',
        [ids],
      );
      return new Map(res.rows.map((r) => [r.sandbox_id, r.state]));
    },
    close: async () => {
      await provider.close();
      await store.close();
      await rm(rootDir, { recursive: true, force: true });
      await db.cleanup();
    },
  };
}

export interface CountingDestroyers {
  destroyers: Destroyers;
  /** destroy() calls per sandbox id, failed ones included. */
  calls: Map<string, number>;
}

/**
 * Wraps the real local provider: counts every destroy by id; `failFirst(id)` says how many of
 * the first calls for an id throw before the real destroy runs.
 */
export function countingDestroyers(
  real: SandboxDestroyer,
  failFirst: (id: string) => number = () => 0,
): CountingDestroyers {
  const calls = new Map<string, number>();
  const wrapper: SandboxDestroyer = {
    kind: real.kind,
    destroy: async (id) => {
      const n = (calls.get(id) ?? 0) + 1;
      calls.set(id, n);
      if (n <= failFirst(id)) throw new Error(`injected failure ${n} for ${id}`);
      await real.destroy(id);
    },
    close: () => real.close(),
  };
  return { destroyers: new Map([[real.kind, wrapper]]), calls };
}
