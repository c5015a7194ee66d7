// Without a pids cgroup (a host that has none, or a service that may not create one) killing
// rests on bubblewrap alone: SIGKILL to the host-side process group, --die-with-parent, and the
// pid namespace, whose every process the kernel kills when its first process dies.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bareBwrapTrue, BARE_BWRAP_TRUE_ARGV } from './bare.ts';
import type { Sandbox } from './provider.ts';
import {
  SESSION,
  marker,
  processesWith,
  useLocalProvider,
  waitForProcesses,
} from './test-support.ts';

const fixture = useLocalProvider({ pidsCgroup: false });
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

const script = (tag: string): string =>
  `for i in 1 2 3; do sh -c 'sleep 60; echo ${tag}' & done\necho started\nsleep 60; echo ${tag}`;

describe('killing without a pids cgroup', () => {
  it('reports how the process cap is (not) enforced', () => {
    expect(fixture.provider.processLimit).toBe(process.getuid?.() === 0 ? 'none' : 'rlimit');
  });

  it('a timeout leaves no process of the command', async () => {
    const tag = marker();
    const result = await sandbox.exec({ shell: script(tag) }, { timeoutMs: 1500 });
    expect(result.timedOut).toBe(true);
    expect(result.stdout.text).toBe('started\n');
    expect(await processesWith(tag)).toEqual([]);
  });

  it('a cancel leaves no process of the command', async () => {
    const tag = marker();
    const controller = new AbortController();
    const pending = sandbox.exec(
      { shell: script(tag) },
      { timeoutMs: 60_000, signal: controller.signal },
    );
    await waitForProcesses(tag, 4);
    controller.abort();
    expect((await pending).canceled).toBe(true);
    expect(await processesWith(tag)).toEqual([]);
  });
});

describe('the benchmark floor', () => {
  it('spawns bare bubblewrap running /bin/true', async () => {
    expect(BARE_BWRAP_TRUE_ARGV.at(-1)).toBe('/bin/true');
    const { durationMs } = await bareBwrapTrue();
    expect(durationMs).toBeGreaterThan(0);
  });
});
