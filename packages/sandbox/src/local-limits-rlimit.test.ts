// Memory and CPU where no cgroup can be made (a service that is not root, a host without the
// controllers): rlimits of each process. RLIMIT_CPU is the CPU share of the command's timeout;
// past it the process gets SIGXCPU and the result says `limitExceeded: 'cpu'`. RLIMIT_AS makes
// an allocation past the memory limit fail inside the program (its own error, not an `oom`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const MEMORY_BYTES = 256 * 1024 * 1024;
// 5% of a 30 s timeout is 1.5 s of CPU: a spin reaches it before the timeout as long as it gets
// a 5% share of a core, which a CI host running other suites still gives (at 25% of 8 s, a load
// of 15 on two cores ended the spin by its timeout instead).
const fixture = useLocalProvider({
  pidsCgroup: false,
  memoryBytes: MEMORY_BYTES,
  cpuPercent: 5,
});
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

describe('memory and CPU without cgroups', () => {
  it('falls back to rlimits', () => {
    expect(fixture.provider.memoryLimit).toBe('rlimit');
    expect(fixture.provider.cpuLimit).toBe('rlimit');
  });

  it.each([
    ['warm', undefined],
    ['cold', ''],
  ])(
    'a CPU spin past its share of the timeout is killed: cpu (%s)',
    { timeout: 60_000 },
    async (_how, stdin) => {
      const r = await sandbox.exec(
        { shell: 'while :; do :; done' },
        { timeoutMs: 30_000, ...(stdin === undefined ? {} : { stdin }) },
      );
      expect(r.timedOut).toBe(false);
      expect(r.limitExceeded).toBe('cpu');
    },
  );

  it('an allocation past the memory limit fails in the program', async () => {
    const r = await sandbox.exec(
      { shell: `python3 -c "a = bytearray(${MEMORY_BYTES * 2}); print('survived')"` },
      { timeoutMs: 10_000 },
    );
    expect(r.stdout.text).not.toContain('survived');
    expect(r.stderr.text).toContain('MemoryError');
    expect((await sandbox.exec({ argv: ['echo', 'ok'] }, { timeoutMs: 10_000 })).stdout.text).toBe(
      'ok\n',
    );
  });
});
