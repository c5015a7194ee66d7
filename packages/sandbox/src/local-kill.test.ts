// Nothing of a command outlives it: a timeout and a cancel kill the whole tree (checked in
// /proc, with a positive control that the marker processes did exist), background processes
// are killed on request, and a fork loop hits the process cap without hurting the host.
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import {
  SESSION,
  marker,
  processesWith,
  useLocalProvider,
  waitForProcesses,
} from './test-support.ts';

const fixture = useLocalProvider();
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

/**
 * Three forked children and a grandchild each, all sleeping, every one carrying the marker.
 * They sleep for ten minutes, far past any test's timeout: a test that returned only once they
 * ended by themselves fails on its timeout, with no stopwatch.
 */
function forkingScript(tag: string): string {
  // `started` first: once the tree's processes are seen, it has been written (a test that waits
  // for the processes and then kills the tree expects it; written after the forks, a kill under
  // load could come before it).
  return [
    'echo started',
    `for i in 1 2 3; do sh -c 'sleep 600; echo ${tag}' & done`,
    `sh -c 'sh -c "sleep 600; echo ${tag}"; echo ${tag}' &`,
    `sleep 600; echo ${tag}`,
  ].join('\n');
}

describe('killing', () => {
  it('a timeout kills the whole process tree', async () => {
    const tag = marker();
    const result = await sandbox.exec({ shell: forkingScript(tag) }, { timeoutMs: 1500 });
    // Killed, not ended: SIGKILL, no exit code, and none of the sleepers got to its echo.
    expect(result.timedOut).toBe(true);
    expect(result.canceled).toBe(false);
    expect(result.signal).toBe('SIGKILL');
    expect(result.exitCode).toBeNull();
    expect(result.stdout.text).toBe('started\n');
    expect(await processesWith(tag)).toEqual([]);
  }, 60_000);

  it('a cancel through the AbortSignal kills the whole process tree', async () => {
    const tag = marker();
    const controller = new AbortController();
    const pending = sandbox.exec(
      { shell: forkingScript(tag) },
      { timeoutMs: 60_000, signal: controller.signal },
    );
    // Positive control: the bash, its four forked shells, the grandchild: six command lines.
    await waitForProcesses(tag, 6);
    controller.abort();
    const result = await pending;
    expect(result.canceled).toBe(true);
    expect(result.timedOut).toBe(false);
    expect(result.stdout.text).toBe('started\n');
    expect(await processesWith(tag)).toEqual([]);
  });

  it('an already aborted signal runs nothing to completion', async () => {
    // Left to run, this takes ten minutes and exits 0: the test's timeout is the check that it
    // is not waited for, and the result that it was killed rather than run.
    const result = await sandbox.exec(
      { shell: 'sleep 600; echo ran' },
      { timeoutMs: 1_200_000, signal: AbortSignal.abort() },
    );
    expect(result.canceled).toBe(true);
    expect(result.exitCode).toBeNull();
    expect(result.stdout.text).toBe('');
  }, 60_000);

  it('a background process reports its pid and start time, and dies when killed', async () => {
    const tag = marker();
    const handle = await sandbox.spawn({ shell: forkingScript(tag) });
    expect(handle.pid).toBeGreaterThan(1);
    expect(handle.startedAt.getTime()).toBeLessThanOrEqual(Date.now());
    expect(handle.procStartTime).toMatch(/^\d+$/);
    await waitForProcesses(tag, 6);
    const stat = await readFile(`/proc/${handle.pid}/stat`, 'utf8');
    expect(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]).toBe(handle.procStartTime);

    const result = await handle.kill();
    expect(result.canceled).toBe(true);
    expect(result.stdout.text).toBe('started\n');
    expect(await handle.wait()).toBe(result);
    expect(await processesWith(tag)).toEqual([]);
    await expect(readFile(`/proc/${handle.pid}/stat`, 'utf8')).rejects.toThrow();
  });

  it('a background process that ends by itself resolves wait() with its result', async () => {
    const handle = await sandbox.spawn({ shell: 'echo bg; exit 4' }, { env: { X: '1' } });
    const result = await handle.wait();
    expect(result).toMatchObject({ exitCode: 4, canceled: false, timedOut: false });
    expect(result.stdout.text).toBe('bg\n');
  });

  it('destroying the sandbox kills its background processes', async () => {
    const other = await fixture.provider.create({ key: { ...SESSION, session: 'doomed' } });
    const tag = marker();
    const handle = await other.spawn({ shell: forkingScript(tag) });
    await waitForProcesses(tag, 6);
    await other.destroy();
    expect((await handle.wait()).canceled).toBe(true);
    expect(await processesWith(tag)).toEqual([]);
    expect(await fixture.provider.open(other.id)).toBeUndefined();
  });
});

describe('process limit', () => {
  it('a fork loop hits the cap; the host and the next command are fine', async (ctx) => {
    if (fixture.provider.processLimit === 'none') {
      ctx.skip(); // root without a pids cgroup: documented as not enforced
    }
    const tag = marker();
    // Forks sleeping children until fork fails; each child lives 20 s at most. Python's fork
    // fails at once with EAGAIN, where bash would keep retrying.
    const script = [
      'import os, sys, time',
      'n = 0',
      'try:',
      '    while n < 500:',
      '        if os.fork() == 0:',
      `            time.sleep(20)  # ${tag}`,
      '            os._exit(0)',
      '        n += 1',
      'except OSError as e:',
      '    print("fork failed after", n, e.errno, flush=True)',
      'else:',
      '    print("no limit after", n, flush=True)',
    ].join('\n');
    const result = await sandbox.exec(
      { argv: ['python3', '-c', script, tag] },
      { timeoutMs: 20_000, limits: { processes: 40 } },
    );
    const match = /fork failed after (\d+) 11/.exec(result.stdout.text);
    expect(match, result.stdout.text + result.stderr.text).not.toBeNull();
    expect(Number(match![1])).toBeLessThan(40);
    // The children died with the command, and the sandbox still works.
    expect(await processesWith(tag)).toEqual([]);
    const next = await sandbox.exec({ argv: ['echo', 'ok'] }, { timeoutMs: 10_000 });
    expect(next.stdout.text).toBe('ok\n');
  });
});
