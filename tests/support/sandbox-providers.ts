// The sandbox providers the session and reaper tests run against, one setup each: the
// configuration that selects it, the destroyers an in-process reaper uses, and how to look at
// (or remove) a sandbox behind the registry's back.
import { access, readdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino } from 'pino';
import type { Config } from '@toolmesh/config';
import type { SandboxRecord, Store } from '@toolmesh/store';
import { startFakeE2b, type FakeE2b } from '@toolmesh/testing';
import {
  destroyersFromConfig,
  type Destroyers,
} from '../../services/sandbox-reaper/src/providers.ts';
import {
  createSandboxReaper,
  type SandboxReaper,
} from '../../services/sandbox-reaper/src/reaper.ts';

export interface ProviderSetup {
  readonly name: string;
  /** Configuration overrides that make the skills service use this provider. */
  env(): Promise<Record<string, string>>;
  /** What a reaper destroys this provider's sandboxes through. */
  destroyers(config: Config, store: Store): Promise<Destroyers>;
  /** Whether the provider still has the sandbox. */
  exists(config: Config, sandboxId: string): Promise<boolean>;
  /** How many sandboxes the provider holds. */
  count(config: Config): Promise<number>;
  /** Deletes a sandbox without telling the registry (a sandbox lost with its host). */
  vanish(config: Config, sandboxId: string): Promise<void>;
  close(): Promise<void>;
}

const rootOf = (config: Config) => resolve(config.sandbox.root_dir);

export const localSetup: ProviderSetup = {
  name: 'local',
  env: () => Promise.resolve({ CG__SANDBOX__PROVIDER: 'local' }),
  destroyers: (config, store) => destroyersFromConfig(config, store, pino({ level: 'silent' })),
  exists: (config, id) =>
    access(join(rootOf(config), id)).then(
      () => true,
      () => false,
    ),
  count: async (config) =>
    (await readdir(rootOf(config)).catch(() => [])).filter((n) => n.startsWith('lsb_')).length,
  vanish: (config, id) => rm(join(rootOf(config), id), { recursive: true, force: true }),
  close: () => Promise.resolve(),
};

/** E2B through the real SDK against the fake E2B server, started on first use. */
function e2bSetup(): ProviderSetup {
  let fake: Promise<FakeE2b> | undefined;
  const started = () => (fake ??= startFakeE2b());
  const has = async (id: string) => (await started()).sandboxes().some((s) => s.id === id);
  return {
    name: 'e2b',
    env: async () => {
      const f = await started();
      return {
        CG__SANDBOX__PROVIDER: 'e2b',
        CG__E2B__API_KEY: f.apiKey,
        CG__E2B__API_URL: f.url,
        CG__E2B__SANDBOX_URL: f.url,
        CG__E2B__DOMAIN: 'sandbox.test',
      };
    },
    destroyers: (config, store) => destroyersFromConfig(config, store, pino({ level: 'silent' })),
    exists: (_config, id) => has(id),
    count: async () => (await started()).sandboxes().length,
    vanish: async (_config, id) => (await started()).vanish(id),
    close: async () => {
      if (fake) await (await fake).stop();
      fake = undefined;
    },
  };
}

export const PROVIDER_SETUPS: readonly ProviderSetup[] = [localSetup, e2bSetup()];

/** A reaper in this process with small, test-friendly settings. */
export function testReaper(
  store: Store,
  destroyers: Destroyers,
  o: { owner?: string; batchSize?: number; concurrency?: number; baseMs?: number } = {},
): SandboxReaper {
  return createSandboxReaper({
    store,
    destroyers,
    owner: o.owner ?? 'reaper:test',
    batchSize: o.batchSize ?? 100,
    concurrency: o.concurrency ?? 4,
    claimMs: 60_000,
    backoff: { baseMs: o.baseMs ?? 60_000, maxMs: 600_000 },
    logger: pino({ level: 'silent' }),
  });
}

/** The registry rows of one session key of a project, oldest first. */
export async function sessionRows(
  store: Store,
  project: string,
  sessionKey: string,
): Promise<SandboxRecord[]> {
  const res = await store.pool.query<SandboxRecord>(
    `SELECT * FROM state.sandboxes WHERE project_id = $1 AND session_key = $2
     ORDER BY created_at`,
    [project, sessionKey],
  );
  return res.rows;
}

/** Sets columns of a sandbox row (expiries, locks) the way time or a crash would. */
export async function setRow(
  store: Store,
  sandboxId: string,
  sql: string,
  values: unknown[] = [],
): Promise<void> {
  await store.pool.query(`UPDATE state.sandboxes SET ${sql} WHERE sandbox_id = $1`, [
    sandboxId,
    ...values,
  ]);
}
