// What a provider's process leaves when it dies without closing is found by its own marks: a
// dead owner's recorded bridges and bwraps of the root whose parent is no live owner. Nothing
// else is touched: not a socat no dead owner recorded, not a live provider's commands.
import { spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sandboxProcesses, sweepOrphans } from './orphans.ts';
import { readProc } from './proc-proof.ts';
import {
  marker,
  processesWith,
  SESSION,
  useLocalProvider,
  waitForProcesses,
} from './test-support.ts';

const fx = useLocalProvider();

const alive = async (pid: number, startTime: string) =>
  (await readProc(pid))?.startTime === startTime;

/** A socat shaped like the runtime's bridge, started by this test (killed at the end). */
async function bridge(): Promise<{ pid: number; startTime: string; socket: string }> {
  const socket = join(tmpdir(), `claude-http-${randomBytes(8).toString('hex')}.sock`);
  const child = spawn('socat', [`UNIX-LISTEN:${socket},fork,reuseaddr`, 'TCP:localhost:9'], {
    stdio: 'ignore',
    detached: true,
  });
  await once(child, 'spawn');
  child.unref();
  const info = await readProc(child.pid!);
  return { pid: child.pid!, startTime: info!.startTime, socket };
}

describe('sweepOrphans', () => {
  it("kills a dead owner's recorded bridge and no other socat", async () => {
    const recorded = await bridge();
    const stranger = await bridge();
    try {
      // An owner that is gone: a process that has exited (its pid with another start time).
      const gone = spawnSync('true');
      expect(gone.pid).toBeGreaterThan(0);
      await mkdir(join(fx.provider.rootDir, '.owners'), { recursive: true });
      await writeFile(
        join(fx.provider.rootDir, '.owners', `${gone.pid}.json`),
        JSON.stringify({ pid: gone.pid, startTime: '1', bridges: [recorded] }),
      );
      await sweepOrphans(fx.provider.rootDir);
      await until(async () => !(await alive(recorded.pid, recorded.startTime)));
      expect(await alive(stranger.pid, stranger.startTime)).toBe(true);
    } finally {
      for (const p of [recorded, stranger]) {
        try {
          process.kill(p.pid, 'SIGKILL');
        } catch {
          // Gone.
        }
      }
    }
  });

  it('kills a bwrap of the root whose parent is gone, and not a live provider’s command', async () => {
    const sandbox = await fx.provider.create({ key: SESSION });
    const live = marker();
    const bg = await sandbox.spawn({ shell: `sleep 300 & wait # ${live}` });
    await waitForProcesses(live, 1);
    // A bwrap whose launcher died before bwrap could tie itself to it (no --die-with-parent
    // here, as when the service is killed in that moment): its parent is init.
    const id = `lsb_${randomBytes(10).toString('hex')}`;
    const work = join(fx.provider.rootDir, id, 'work');
    await mkdir(work, { recursive: true });
    const lost = marker();
    const sh = spawn(
      '/bin/sh',
      [
        '-c',
        'bwrap --ro-bind / / --bind "$1" "$1" --setenv TM_MARK "$2" --unshare-pid -- sleep 300 >/dev/null 2>&1 &',
        'sh',
        work,
        lost,
      ],
      { stdio: 'ignore' },
    );
    await once(sh, 'exit');
    // The shell's child has the marker before it execs bwrap: wait for bwrap itself.
    await until(async () => (await sandboxProcesses(work)).some((p) => p.info.argv[0] === 'bwrap'));
    await sweepOrphans(fx.provider.rootDir);
    await until(async () => (await processesWith(lost)).length === 0);
    expect((await processesWith(live)).length).toBeGreaterThan(0);
    await bg.kill();
    await fx.provider.destroy(sandbox.id);
  }, 30_000);
});

async function until(ok: () => Promise<boolean>, ms = 10_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await ok())) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}
