// Destroying a local sandbox from outside the provider that made it (the sandbox-reaper's way):
// its background processes die, its folder goes, and nothing that is not provably the
// sandbox's is touched.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { access, mkdir } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createLocalSandboxReaper } from './local-reap.ts';
import { killOutermostFirst, sandboxProcesses } from './orphans.ts';
import {
  marker,
  processesWith,
  SESSION,
  useLocalProvider,
  waitForProcesses,
} from './test-support.ts';

const fx = useLocalProvider();

const exists = (path: string) =>
  access(path).then(
    () => true,
    () => false,
  );

describe('createLocalSandboxReaper', () => {
  for (const pidsCgroup of [true, false]) {
    it(`kills a background command and removes the folder (pids cgroup ${pidsCgroup ? 'on' : 'off'})`, async () => {
      const sandbox = await fx.provider.create({ key: SESSION });
      const bg = await sandbox.spawn({ shell: 'sleep 300' });
      await sandbox.putFile('kept.txt', 'x');
      const reaper = await createLocalSandboxReaper({ rootDir: fx.provider.rootDir, pidsCgroup });
      await reaper.destroy(sandbox.id);
      const ended = await bg.wait();
      expect(ended.signal).toBe('SIGKILL');
      expect(await exists(join(fx.provider.rootDir, sandbox.id))).toBe(false);
      expect(await fx.provider.open(sandbox.id)).toBeUndefined();
      // Idempotent: a second destroy of a gone sandbox is no error.
      await reaper.destroy(sandbox.id);
    });
  }

  it('kills the host-side bwrap before its namespace, whatever order /proc lists them in', async () => {
    // Regression: the scan killed in /proc order with a read between kills. After a pid wrap
    // (pid_max is 32768 on many hosts) the namespace's init is listed before its bwrap: killed
    // first, it let the bwrap exit with a status before its own SIGKILL came (signal null).
    const sandbox = await fx.provider.create({ key: SESSION });
    const bg = await sandbox.spawn({ shell: 'sleep 300' });
    const dir = `${join(fx.provider.rootDir, sandbox.id)}/`;
    let procs = await sandboxProcesses(dir);
    while (procs.length < 2 || !procs.some((p) => p.info.ppid === bg.pid)) {
      await new Promise((resolve) => setTimeout(resolve, 20));
      procs = await sandboxProcesses(dir);
    }
    const innerFirst = [...procs].sort(
      (a, b) => Number(a.pid === bg.pid) - Number(b.pid === bg.pid),
    );
    expect(innerFirst.at(-1)?.pid).toBe(bg.pid);
    killOutermostFirst(innerFirst);
    expect((await bg.wait()).signal).toBe('SIGKILL');
    await fx.provider.destroy(sandbox.id);
  });

  it('kills a process recorded in a head only when pid, start time and command prove it', async () => {
    const sandbox = await fx.provider.create({ key: SESSION });
    const dir = join(fx.provider.rootDir, sandbox.id);
    // Not bwrap, though its command line names the sandbox's folder: never ours.
    const m = marker();
    const stranger = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 300000)', `${dir}/`, m], {
      stdio: 'ignore',
    });
    await once(stranger, 'spawn');
    try {
      await waitForProcesses(m, 1);
      const reaper = await createLocalSandboxReaper({
        rootDir: fx.provider.rootDir,
        pidsCgroup: false,
        processesOf: () => Promise.resolve([{ pid: stranger.pid!, procStartTime: '1' }]),
      });
      await reaper.destroy(sandbox.id);
      expect(await processesWith(m)).toEqual([stranger.pid]);
      expect(await exists(dir)).toBe(false);
    } finally {
      stranger.kill('SIGKILL');
    }
  });

  it('deletes nothing that is not a local sandbox id', async () => {
    const reaper = await createLocalSandboxReaper({ rootDir: fx.provider.rootDir });
    const other = join(fx.provider.rootDir, 'not-a-sandbox');
    await mkdir(other, { recursive: true });
    await reaper.destroy('not-a-sandbox');
    await reaper.destroy('../not-a-sandbox');
    expect(await exists(other)).toBe(true);
  });
});
