// What a command can reach: reads are an allow-list, writes stay in the workdir (and a private
// /tmp), it is not root on the host, and its sandbox's memory and CPU are capped (cgroups here).
// Each check runs cold (a bwrap per command) and warm (the sandbox's resident executor).
import { randomBytes } from 'node:crypto';
import { statSync } from 'node:fs';
import { mkdir, readFile, rm, truncate, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ExecResult, Sandbox } from './provider.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const CHECKOUT = join(import.meta.dirname, '..', '..', '..');
const MEMORY_BYTES = 128 * 1024 * 1024;
const CPU_PERCENT = 20;
const isRoot = process.getuid?.() === 0;
/** Taken before the provider starts: opening its sockets to the sandbox user must not touch /tmp. */
const tmpModeBefore = statSync('/tmp').mode;

const fixture = useLocalProvider({ memoryBytes: MEMORY_BYTES, cpuPercent: CPU_PERCENT });
let sandbox: Sandbox;
let other: Sandbox;
const hostTmp = join('/tmp', `toolmesh-host-secret-${randomBytes(6).toString('hex')}`);

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
  other = await fixture.provider.create({ key: { ...SESSION, project: 'other-project' } });
  await other.putFile('secret.txt', 'other project data\n');
  await writeFile(hostTmp, 'host tmp secret\n');
});
afterAll(async () => {
  await sandbox?.destroy();
  await other?.destroy();
  await rm(hostTmp, { force: true });
});

const sh = (script: string, timeoutMs = 10_000): Promise<ExecResult> =>
  sandbox.exec({ shell: script }, { timeoutMs });

describe('the host around the sandboxes', () => {
  // Regression: opening the runtime's sockets to the sandbox user once chmodded their folder,
  // the host's /tmp itself, to 0711.
  it("leaves the host's /tmp mode alone", () => {
    expect(statSync('/tmp').mode).toBe(tmpModeBefore);
  });
});

describe('reads are an allow-list', () => {
  it.each([
    ['/etc/shadow'],
    ['/etc/gshadow'],
    [join(CHECKOUT, 'package.json')],
    [join(CHECKOUT, 'config.toml')],
    [hostTmp],
  ])('cannot read %s', async (path) => {
    const r = await sandbox.exec({ argv: ['cat', path] }, { timeoutMs: 10_000 });
    expect(r.exitCode).not.toBe(0);
    expect(r.stdout.text).toBe('');
  });

  it("cannot see another sandbox's workdir, the sandboxes' folder, /root or /home", async () => {
    const r = await sh(
      `cat ${join(other.workdir, 'secret.txt')}; ls -A ${fixture.provider.rootDir}; ls -A /root /home /var/lib 2>&1; echo end`,
    );
    expect(r.stdout.text).not.toContain('other project data');
    expect(r.stdout.text).not.toContain(other.id);
    expect(r.stdout.text).not.toMatch(/postgres|\.bashrc/);
  });

  it.runIf(isRoot)('sees no file of the checkout, not even the runtime’s own', async () => {
    // As root the runtime's helper and JVM agent are copies under the sandboxes' folder: the
    // sandbox user may not be able to enter the checkout, and bwrap binds with its rights.
    const r = await sh(`find ${CHECKOUT} -type f 2>/dev/null | head -5; echo end`);
    expect(r.stdout.text).toBe('end\n');
  });

  it('runs programs, with users by name and TLS roots', async () => {
    const r = await sh(
      'grep -c ^root: /etc/passwd && ls /etc/ssl/certs | head -1 && python3 -c "print(6*7)"',
    );
    expect(r.stderr.text).toBe('');
    expect(r.exitCode).toBe(0);
    expect(r.stdout.text).toContain('42');
  });
});

describe('writes stay in the workdir', () => {
  it('refuses /etc, /usr, /var and the checkout', async () => {
    const r = await sh(
      `for p in /etc/x /usr/x /var/x ${join(CHECKOUT, 'x')}; do echo x > $p && echo wrote $p; done; echo end`,
    );
    expect(r.stdout.text).toBe('end\n');
    expect(r.stderr.text).toMatch(/Read-only file system/);
  });

  it('gives each command a private /tmp', async () => {
    const name = `private-${randomBytes(4).toString('hex')}`;
    const r = await sh(`echo mine > /tmp/${name} && cat /tmp/${name}`);
    expect(r.stdout.text).toBe('mine\n');
    await expect(readFile(join('/tmp', name))).rejects.toThrow();
    const again = await other.exec({ argv: ['ls', '-A', '/tmp'] }, { timeoutMs: 10_000 });
    expect(again.stdout.text).not.toContain(name);
  });
});

describe('the command is not root', () => {
  it(`runs as ${isRoot ? 'uid 65534' : 'this user'}, and owns the workdir`, async () => {
    const r = await sh('id -u; echo made > made.txt; stat -c %u made.txt');
    const [uid, owner] = r.stdout.text.trim().split('\n');
    expect(uid).not.toBe('0');
    expect(uid).toBe(String(isRoot ? 65534 : process.getuid?.()));
    expect(owner).toBe(uid);
    expect(fixture.provider.sandboxUid).toBe(Number(uid));
  });

  it('can change files the host put in (inputs, skill folders)', async () => {
    await sandbox.putFile('skills/demo/run.sh', 'echo v1\n');
    const r = await sh(
      'echo v2 > skills/demo/run.sh && echo new > skills/demo/out.txt && cat skills/demo/run.sh',
    );
    expect(r.stderr.text).toBe('');
    expect(r.stdout.text).toBe('v2\n');
    expect((await sandbox.getFile('skills/demo/out.txt')).toString()).toBe('new\n');
  });
});

describe.runIf(isRoot)('memory and CPU (cgroups)', () => {
  it('uses cgroups for both here', () => {
    expect(fixture.provider.memoryLimit).toBe('cgroup');
    expect(fixture.provider.cpuLimit).toBe('cgroup');
  });

  it('an allocation past the memory limit is an out-of-memory kill, cold and warm', async () => {
    const hog = `python3 -c "a = bytearray(${MEMORY_BYTES * 2}); print('survived')"`;
    const warm = await sh(hog);
    expect(warm.stdout.text).not.toContain('survived');
    expect(warm.limitExceeded).toBe('memory');
    const cold = await sandbox.exec({ shell: hog }, { timeoutMs: 10_000, stdin: '' });
    expect(cold.limitExceeded).toBe('memory');
    // The sandbox still runs commands afterwards.
    expect((await sh('echo ok')).stdout.text).toBe('ok\n');
  });

  it('a CPU spin is throttled to the sandbox share', async () => {
    const r = await sh('timeout 2 sh -c "while :; do :; done"; times', 15_000);
    // `times`: the children's user and system time on its second line.
    const children = r.stdout.text.trim().split('\n')[1] ?? '';
    const seconds = [...children.matchAll(/(\d+)m([\d.]+)s/g)].reduce(
      (sum, m) => sum + Number(m[1]) * 60 + Number(m[2]),
      0,
    );
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThan((2 * CPU_PERCENT) / 100 + 0.3);
  });

  it('the fork bomb meets the process cap and the sandbox still serves', async () => {
    const r = await sandbox.exec(
      { shell: 'b() { b | b & }; b; sleep 2; echo after' },
      { timeoutMs: 10_000, limits: { processes: 64 } },
    );
    expect(r.timedOut).toBe(false);
    expect((await sh('echo ok')).stdout.text).toBe('ok\n');
  });
});

describe('reading an output file', () => {
  it('refuses a file over the limit by its size, before reading it', async () => {
    await mkdir(join(sandbox.workdir, 'big'), { recursive: true });
    const path = join(sandbox.workdir, 'big', 'huge.bin');
    await writeFile(path, '');
    // A sparse TiB: reading it whole would take hours (and no Buffer holds it), so the test's
    // timeout is the check that nothing reads it. `size_bytes` is the file's full size, which
    // only its stat knows: a refusal once too many bytes had arrived would report those.
    const TiB = 1024 ** 4;
    await truncate(path, TiB);
    try {
      await expect(
        sandbox.getFile('big/huge.bin', { maxBytes: 1024 * 1024 }),
      ).rejects.toMatchObject({
        reason: 'too_large',
        details: { size_bytes: TiB, limit_bytes: 1024 * 1024 },
      });
    } finally {
      await rm(path);
    }
  }, 60_000);
});
