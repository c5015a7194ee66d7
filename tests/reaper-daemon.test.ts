// The sandbox-reaper as the process `pnpm stack` runs: it answers /healthz, heartbeats in
// state.service_instances, and a SIGTERM that arrives mid-pass lets the pass finish (every
// sandbox it took is destroyed, none left `reaping`, the summary logged) before it exits 0.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, readdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startReaperWorld, type ReaperWorld } from './support/reaper-rows.ts';

let world: ReaperWorld;
beforeAll(async () => {
  world = await startReaperWorld();
}, 60_000);
afterAll(async () => {
  await world?.close();
});

const SANDBOXES = 300;
const FILES_EACH = 60;

interface LogLine {
  msg: string;
  [key: string]: unknown;
}

describe('sandbox-reaper daemon', () => {
  it('SIGTERM mid-pass: the pass finishes, the summary is logged, exit 0', async () => {
    // Many sandboxes with many files, destroyed one at a time: a pass that takes a while.
    const ids = await world.sandboxes(SANDBOXES, `idle_expires_at = now() - interval '1 minute'`);
    for (const id of ids) {
      const dir = join(world.rootDir, id, 'work', 'many');
      await mkdir(dir, { recursive: true });
      await Promise.all(
        Array.from({ length: FILES_EACH }, (_, i) => writeFile(join(dir, `f${i}`), 'x')),
      );
    }
    const child = spawn(
      process.execPath,
      [join(REPO_ROOT, 'services/sandbox-reaper/src/main.ts')],
      {
        cwd: REPO_ROOT,
        env: {
          PATH: process.env['PATH'] ?? '',
          CG__POSTGRES__URL: world.dbUrl,
          CG__SANDBOX__ROOT_DIR: world.rootDir,
          CG__SERVICE__INSTANCE_ID: 'reaper-under-test',
          CG__REAPER__HEALTH_PORT: '0',
          CG__REAPER__CONCURRENCY: '1',
          CG__REAPER__BATCH_SIZE: '1000',
          CG__REAPER__INTERVAL_MS: '60000',
          CG__LOG__LEVEL: 'info',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    );
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const exited = once(child, 'exit');
    try {
      const lines = () =>
        out
          .split('\n')
          .filter((l) => l.startsWith('{'))
          .map((l) => JSON.parse(l) as LogLine);
      const reaping = async () =>
        Number(
          (
            await world.store.pool.query<{ n: string }>(
              `SELECT count(*) AS n FROM state.sandboxes WHERE state = 'reaping'`,
            )
          ).rows[0]!.n,
        );
      // Mid-pass: the batch is claimed and not all of it destroyed yet.
      for (let i = 0; (await reaping()) === 0; i++) {
        if (i > 2_000 || child.exitCode !== null) throw new Error(`no pass started:\n${out}`);
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      const port = lines().find((l) => l.msg === 'sandbox reaper started')?.['port'];
      expect(port).toBeTypeOf('number');
      const health = await fetch(`http://127.0.0.1:${String(port)}/healthz`);
      expect(health.status).toBe(200);
      expect(await health.json()).toMatchObject({
        status: 'ok',
        instance_id: 'reaper-under-test',
      });
      child.kill('SIGTERM');
      const [code] = await exited;
      expect(code, out).toBe(0);

      expect(await reaping()).toBe(0);
      const states = await world.states(ids);
      expect([...states.values()].every((s) => s === 'destroyed')).toBe(true);
      expect((await readdir(world.rootDir)).filter((n) => ids.includes(n))).toEqual([]);

      const log = lines();
      const stopping = log.findIndex((l) => l.msg.startsWith('stopping'));
      const summary = log.findIndex((l) => l.msg === 'reaper pass');
      expect(stopping).toBeGreaterThanOrEqual(0);
      // The signal came before the pass ended, and the pass still ended whole.
      expect(summary).toBeGreaterThan(stopping);
      expect(log[summary]).toMatchObject({
        taken: SANDBOXES,
        destroyed: SANDBOXES,
        failed: 0,
      });
      expect(log.at(-1)?.msg).toBe('stopped');

      const beat = await world.store.instances.list('sandbox-reaper');
      expect(beat.map((b) => b.instance_id)).toEqual(['reaper-under-test']);
    } finally {
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    }
  }, 120_000);
});
