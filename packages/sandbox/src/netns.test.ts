import { spawn, type ChildProcess } from 'node:child_process';
import { afterEach, describe, expect, it } from 'vitest';
import { netnsPidOf } from './netns.ts';

const children: ChildProcess[] = [];
afterEach(() => {
  for (const c of children.splice(0)) c.kill('SIGKILL');
});

function start(argv: string[]): ChildProcess {
  const c = spawn(argv[0]!, argv.slice(1), { stdio: 'ignore', detached: true });
  children.push(c);
  return c;
}

async function poll<T>(fn: () => Promise<T | undefined>, ms = 5_000): Promise<T | undefined> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined || Date.now() > end) return v;
    await new Promise((r) => setTimeout(r, 50));
  }
}

// Creating a network namespace needs root (the skills service runs as root).
const root = process.getuid?.() === 0;

describe('netnsPidOf', () => {
  it.skipIf(!root)('finds a descendant in another network namespace', async () => {
    const c = start(['sh', '-c', 'unshare -n sleep 30; true']);
    const pid = await poll(() => netnsPidOf(c.pid!));
    expect(pid).toBeDefined();
    expect(pid).not.toBe(c.pid);
    const { readFile } = await import('node:fs/promises');
    expect(await readFile(`/proc/${pid}/cmdline`, 'utf8')).toContain('sleep');
  });

  it('is undefined when every descendant shares the network namespace', async () => {
    const c = start(['sh', '-c', 'sleep 30; true']);
    await new Promise((r) => setTimeout(r, 200));
    expect(await netnsPidOf(c.pid!)).toBeUndefined();
  });

  it('is undefined for a pid that does not exist', async () => {
    expect(await netnsPidOf(2 ** 22 + 1)).toBeUndefined();
  });
});
