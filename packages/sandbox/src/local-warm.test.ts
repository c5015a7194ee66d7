// The warm executor: consecutive commands of a sandbox share one resident bwrap, what a command
// leaves behind is killed with it, and it stops after its idle time. Which executor ran a
// command shows in the start time of pid 1 of its pid namespace.
import { describe, expect, it } from 'vitest';
import { MarkerSplitter } from './local-warm.ts';
import type { Sandbox } from './provider.ts';
import { SESSION, marker, processesWith, useLocalProvider } from './test-support.ts';

const INIT_START = { shell: "cut -d' ' -f22 /proc/1/stat" };

async function initStart(sandbox: Sandbox): Promise<string> {
  const result = await sandbox.exec(INIT_START, { timeoutMs: 10_000 });
  expect(result.exitCode, result.stderr.text).toBe(0);
  return result.stdout.text.trim();
}

describe('warm executor', () => {
  const fixture = useLocalProvider({ warmIdleMs: 1_000 });

  it('runs consecutive commands in one executor, each with its own result', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      const first = await initStart(sandbox);
      const failing = await sandbox.exec(
        { shell: 'echo out; echo err >&2; exit 7' },
        { timeoutMs: 10_000 },
      );
      expect([failing.exitCode, failing.stdout.text, failing.stderr.text]).toEqual([
        7,
        'out\n',
        'err\n',
      ]);
      expect(await initStart(sandbox)).toBe(first);
    } finally {
      await sandbox.destroy();
    }
  });

  it('kills a process that left the command, and starts a new executor', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      const first = await initStart(sandbox);
      const tag = marker();
      const result = await sandbox.exec(
        { shell: `setsid sh -c 'sleep 60; echo ${tag}' >/dev/null 2>&1 & echo started` },
        { timeoutMs: 10_000 },
      );
      expect(result.stdout.text).toBe('started\n');
      expect(await processesWith(tag)).toEqual([]);
      expect(await initStart(sandbox)).not.toBe(first);
    } finally {
      await sandbox.destroy();
    }
  });

  it('stops after its idle time', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      const first = await initStart(sandbox);
      await new Promise((resolve) => setTimeout(resolve, 1_500));
      expect(await initStart(sandbox)).not.toBe(first);
    } finally {
      await sandbox.destroy();
    }
  });

  it('keeps output that holds the start of the end marker', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      const text = 'a'.repeat(100_000);
      const result = await sandbox.exec(
        { argv: ['printf', '%s', text] },
        { timeoutMs: 10_000, limits: { stdoutBytes: 200_000 } },
      );
      expect(result.stdout.text).toBe(text);
      expect(result.stdout.totalBytes).toBe(100_000);
    } finally {
      await sandbox.destroy();
    }
  });
});

describe('without a warm executor', () => {
  const fixture = useLocalProvider({ warmIdleMs: 0 });

  it('runs every command in its own bwrap', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      expect(await initStart(sandbox)).not.toBe(await initStart(sandbox));
    } finally {
      await sandbox.destroy();
    }
  });
});

describe('MarkerSplitter', () => {
  function split(marker: string, chunks: string[]): { out: string; done: boolean } {
    let out = '';
    const splitter = new MarkerSplitter(
      marker,
      (b) => (out += b.toString()),
      () => undefined,
    );
    for (const chunk of chunks) splitter.push(Buffer.from(chunk));
    return { out, done: splitter.done };
  }

  it('passes bytes before a marker split across chunks, and nothing after it', () => {
    expect(split('MARK', ['hello MA', 'RK', 'late'])).toEqual({ out: 'hello ', done: true });
    expect(split('MARK', ['M', 'A', 'R', 'K'])).toEqual({ out: '', done: true });
  });

  it('releases a held prefix that turns out not to be the marker', () => {
    expect(split('MARK', ['xMA', 'Ry', 'MARK'])).toEqual({ out: 'xMARy', done: true });
    expect(split('MARK', ['MAMA', 'MARK'])).toEqual({ out: 'MAMA', done: true });
    expect(split('MARK', ['abc', 'MA'])).toEqual({ out: 'abc', done: false });
  });
});
