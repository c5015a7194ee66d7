// The sandbox-reaper over real local sandboxes and a real database: two reapers at once destroy
// each of 200 expired sandboxes exactly once and touch nothing held by a live lock or a running
// task; a failing destroy is retried after a backoff until it succeeds; a crashed reaper's
// claims are taken again once they lapse.
import { randomUUID } from 'node:crypto';
import { access } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandboxReaper } from '@toolmesh/sandbox';
import type { PassSummary, SandboxReaper } from '../services/sandbox-reaper/src/reaper.ts';
import { testReaper } from './support/sandbox-providers.ts';
import { countingDestroyers, startReaperWorld, type ReaperWorld } from './support/reaper-rows.ts';

let world: ReaperWorld;
beforeAll(async () => {
  world = await startReaperWorld();
}, 60_000);
afterAll(async () => {
  await world?.close();
});

const exists = (id: string) =>
  access(join(world.rootDir, id)).then(
    () => true,
    () => false,
  );

const EXPIRED = `idle_expires_at = now() - interval '1 minute'`;

/** Runs passes until one takes nothing; returns every pass's summary. */
async function drain(reaper: SandboxReaper): Promise<PassSummary[]> {
  const passes: PassSummary[] = [];
  for (;;) {
    const s = await reaper.runPass();
    passes.push(s);
    if (s.taken === 0) return passes;
  }
}

describe('sandbox-reaper', () => {
  it('two reapers over 200 expired sandboxes destroy each exactly once and leave held ones alone', async () => {
    const expired = await world.sandboxes(200, EXPIRED);
    const lockedAlive = await world.sandboxes(
      10,
      `${EXPIRED}, hard_expires_at = now() - interval '1 minute', lock_owner = 'live-call',
       lock_expires_at = now() + interval '10 minutes'`,
    );
    const withTask = await world.sandboxes(5, EXPIRED);
    for (const id of withTask) {
      await world.store.pool.query(
        `INSERT INTO state.skill_tasks (task_id, project_id, tool_call_id, sandbox_id, command,
           owner_instance) VALUES ($1, 'p', $2, $3, 'sleep 60', 'skills-1')`,
        [randomUUID(), randomUUID(), id],
      );
    }
    const fresh = await world.sandboxes(10, 'last_used_at = now()');
    const real = await createLocalSandboxReaper({ rootDir: world.rootDir });
    const counting = countingDestroyers(real);
    const opts = { batchSize: 20, concurrency: 4 };
    const [a, b] = await Promise.all([
      drain(testReaper(world.store, counting.destroyers, { ...opts, owner: 'reaper:a' })),
      drain(testReaper(world.store, counting.destroyers, { ...opts, owner: 'reaper:b' })),
    ]);
    const taken = (passes: PassSummary[]) => passes.reduce((n, p) => n + p.taken, 0);
    expect(taken(a) + taken(b)).toBe(200);
    // Both took part: the batches were split between them, not run twice.
    expect(taken(a)).toBeGreaterThan(0);
    expect(taken(b)).toBeGreaterThan(0);
    expect([...a, ...b].reduce((n, p) => n + p.failed, 0)).toBe(0);

    for (const id of expired) expect(counting.calls.get(id), id).toBe(1);
    expect(counting.calls.size).toBe(200);
    const states = await world.states([...expired, ...lockedAlive, ...withTask, ...fresh]);
    for (const id of expired) {
      expect(states.get(id)).toBe('destroyed');
      expect(await exists(id)).toBe(false);
    }
    for (const id of [...lockedAlive, ...withTask, ...fresh]) {
      expect(states.get(id)).toBe('active');
      expect(await exists(id)).toBe(true);
    }
    // The held ones are reported as skipped, not silently ignored.
    expect(a.at(-1)!.skipped).toBe(lockedAlive.length + withTask.length);
    await world.store.pool.query(
      `UPDATE state.sandboxes SET state = 'destroyed'
      WHERE sandbox_id = ANY($1)`,
      [[...lockedAlive, ...withTask, ...fresh]],
    );
  }, 120_000);

  it('a failing destroy is retried after a backoff and succeeds in the end', async () => {
    const id = (await world.sandboxes(1, EXPIRED))[0]!;
    const real = await createLocalSandboxReaper({ rootDir: world.rootDir });
    const counting = countingDestroyers(real, (x) => (x === id ? 2 : 0));
    const reaper = testReaper(world.store, counting.destroyers, { baseMs: 200 });
    const row = async () =>
      (
        await world.store.pool.query<{
          state: string;
          reap_attempts: number;
          last_error: string | null;
          due_in_ms: number;
          lock_owner: string | null;
        }>(
          `SELECT state, reap_attempts, last_error, lock_owner,
             (extract(epoch FROM next_attempt_at - now()) * 1000)::float8 AS due_in_ms
           FROM state.sandboxes WHERE sandbox_id = $1`,
          [id],
        )
      ).rows[0]!;

    const first = await reaper.runPass();
    expect(first).toMatchObject({ taken: 1, failed: 1, destroyed: 0 });
    const afterFirst = await row();
    expect(afterFirst).toMatchObject({ state: 'reaping', reap_attempts: 1, lock_owner: null });
    expect(afterFirst.last_error).toContain('injected failure 1');
    expect(afterFirst.due_in_ms).toBeGreaterThan(0);
    // Not due yet: the next pass leaves it.
    expect((await reaper.runPass()).taken).toBe(0);

    const passes: PassSummary[] = [];
    while ((await row()).state !== 'destroyed') {
      await new Promise((resolve) => setTimeout(resolve, 100));
      const s = await reaper.runPass();
      if (s.taken > 0) passes.push(s);
    }
    // One more failure (attempt 2), then the destroy that works, each a retry.
    expect(passes.map((p) => [p.retry, p.failed, p.destroyed])).toEqual([
      [1, 1, 0],
      [1, 0, 1],
    ]);
    expect(counting.calls.get(id)).toBe(3);
    expect(await row()).toMatchObject({ state: 'destroyed', reap_attempts: 2, last_error: null });
    expect(await exists(id)).toBe(false);
  });

  it("a crashed reaper's claims are taken again once they lapse, not before", async () => {
    const live = await world.sandboxes(
      3,
      `${EXPIRED}, state = 'reaping', lock_owner = 'reaper:alive',
       lock_expires_at = now() + interval '10 minutes'`,
    );
    const crashed = await world.sandboxes(
      3,
      `${EXPIRED}, state = 'reaping', lock_owner = 'reaper:crashed',
       lock_expires_at = now() - interval '1 second'`,
    );
    const real = await createLocalSandboxReaper({ rootDir: world.rootDir });
    const counting = countingDestroyers(real);
    const pass = await testReaper(world.store, counting.destroyers).runPass();
    expect(pass).toMatchObject({ taken: 3, retry: 3, destroyed: 3 });
    expect([...counting.calls.keys()].sort()).toEqual([...crashed].sort());
    const states = await world.states([...live, ...crashed]);
    for (const id of crashed) expect(states.get(id)).toBe('destroyed');
    for (const id of live) expect(states.get(id)).toBe('reaping');
  });
});
