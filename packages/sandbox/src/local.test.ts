// The local provider against real bubblewrap: results, output tails, the environment, and the
// file system boundary. Kills and limits are in local-kill.test.ts, the network in
// local-network.test.ts, file transfer in local-files.test.ts.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const fixture = useLocalProvider();
let sandbox: Sandbox;
const SECRET = 'TOOLMESH_TEST_SECRET';

beforeAll(async () => {
  process.env[SECRET] = 'the-host-secret-value';
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  delete process.env[SECRET];
  await sandbox?.destroy();
});

describe('local sandbox', () => {
  it('runs echo hi: stdout, exit 0, no denials', async () => {
    const result = await sandbox.exec({ argv: ['echo', 'hi'] }, { timeoutMs: 10_000 });
    expect(result).toMatchObject({
      exitCode: 0,
      signal: null,
      stdout: { text: 'hi\n', truncated: false, totalBytes: 3 },
      stderr: { text: '', truncated: false, totalBytes: 0 },
      timedOut: false,
      canceled: false,
      denials: [],
    });
    expect(result.durationMs).toBeGreaterThan(0);
  });

  it('keeps stdout, stderr and the exit code of a failing command', async () => {
    const result = await sandbox.exec(
      { shell: 'echo partial output; echo the error >&2; exit 7' },
      { timeoutMs: 10_000 },
    );
    expect(result.exitCode).toBe(7);
    expect(result.stdout.text).toBe('partial output\n');
    expect(result.stderr.text).toBe('the error\n');
  });

  it('keeps the tail of output past the limit and says it was truncated', async () => {
    const result = await sandbox.exec(
      { shell: 'seq 1 100000; echo "the error at the end" >&2' },
      { timeoutMs: 10_000, limits: { stdoutBytes: 1000 } },
    );
    expect(result.exitCode).toBe(0);
    expect(result.stdout.truncated).toBe(true);
    expect(result.stdout.totalBytes).toBe(588_895); // every byte `seq 1 100000` prints
    expect(Buffer.byteLength(result.stdout.text)).toBeLessThanOrEqual(1000);
    expect(result.stdout.text.endsWith('99999\n100000\n')).toBe(true);
    expect(result.stderr).toEqual({
      text: 'the error at the end\n',
      truncated: false,
      totalBytes: 21,
    });
  });

  it('runs in the workdir, with HOME there and the cwd option relative to it', async () => {
    await sandbox.exec({ shell: 'mkdir -p sub/dir' }, { timeoutMs: 10_000 });
    const result = await sandbox.exec(
      { shell: 'pwd; echo "$HOME"' },
      { timeoutMs: 10_000, cwd: 'sub/dir' },
    );
    expect(result.stdout.text).toBe(`${join(sandbox.workdir, 'sub/dir')}\n${sandbox.workdir}\n`);
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, cwd: '../..' }),
    ).rejects.toMatchObject({ reason: 'path_escape', code: 'invalid_arguments' });
  });

  it('scrubs the environment to the allow-list plus the call env', async () => {
    expect(process.env[SECRET]).toBeDefined();
    const result = await sandbox.exec(
      { argv: ['env', '-0'] },
      { timeoutMs: 10_000, env: { CALL_VAR: 'from the call' } },
    );
    const names = result.stdout.text
      .split('\0')
      .filter((line) => line !== '')
      .map((line) => line.slice(0, line.indexOf('=')));
    expect(result.stdout.text).not.toContain('the-host-secret-value');
    expect(names).not.toContain(SECRET);
    expect(result.stdout.text).toContain('CALL_VAR=from the call\0');
    const proxy = /^(HTTPS?_PROXY|https?_proxy|ALL_PROXY|all_proxy|NO_PROXY|no_proxy)$/;
    const allowed = new Set(['PATH', 'HOME', 'LANG', 'TMPDIR', 'CALL_VAR', 'PWD', 'SHLVL', '_']);
    expect(names.filter((name) => !allowed.has(name) && !proxy.test(name))).toEqual([]);
  });

  it('passes env values and arguments full of shell metacharacters verbatim, executing nothing', async () => {
    const evil = `$(touch ${sandbox.workdir}/pwned); "'\`;|&><*? \${HOME} \n$((1+1))`;
    const shell = await sandbox.exec(
      { shell: 'printf "%s" "$EVIL"' },
      { timeoutMs: 10_000, env: { EVIL: evil } },
    );
    expect(shell.stdout.text).toBe(evil);
    const argv = await sandbox.exec(
      { argv: ['printf', '%s|%s', evil, '`touch pwned2`'] },
      { timeoutMs: 10_000, env: { EVIL: evil } },
    );
    expect(argv.stdout.text).toBe(`${evil}|\`touch pwned2\``);
    const printenv = await sandbox.exec(
      { argv: ['printenv', 'EVIL'] },
      { timeoutMs: 10_000, env: { EVIL: evil } },
    );
    expect(printenv.stdout.text).toBe(`${evil}\n`);
    expect(existsSync(join(sandbox.workdir, 'pwned'))).toBe(false);
    expect(existsSync(join(sandbox.workdir, 'pwned2'))).toBe(false);
  });

  it('refuses env names that are not identifiers or are reserved', async () => {
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, env: { 'A;B': 'x' } }),
    ).rejects.toMatchObject({ reason: 'invalid_env' });
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, env: { TOOLMESH_ARG_0: 'x' } }),
    ).rejects.toMatchObject({ reason: 'invalid_env' });
  });

  it('blocks a write outside the workdir and reports the denial', async () => {
    const result = await sandbox.exec(
      { shell: 'echo inside > ok.txt && touch /etc/toolmesh-escape; echo done' },
      { timeoutMs: 10_000 },
    );
    expect(result.stderr.text).toMatch(/Read-only file system/);
    expect(existsSync('/etc/toolmesh-escape')).toBe(false);
    expect(existsSync(join(sandbox.workdir, 'ok.txt'))).toBe(true);
    expect(result.denials).toContainEqual({
      kind: 'filesystem',
      operation: 'openat',
      target: '/etc/toolmesh-escape',
      source: 'runtime',
    });
    // The write inside the workdir is not a denial.
    expect(result.denials.every((denial) => !denial.target.includes('ok.txt'))).toBe(true);
  });

  it('hides other sandboxes and the host home directory', async () => {
    const other = await fixture.provider.create({ key: { ...SESSION, session: 'other' } });
    try {
      await other.putFile('private.txt', 'not for you');
      const result = await sandbox.exec(
        {
          shell: `cat ${join(other.workdir, 'private.txt')}; ls ~root/ 2>&1 | head -3; echo x > ${join(other.workdir, 'w')}`,
        },
        { timeoutMs: 10_000 },
      );
      expect(result.stdout.text).not.toContain('not for you');
      expect(result.stderr.text).toContain('No such file or directory');
      expect(existsSync(join(other.workdir, 'w'))).toBe(false);
    } finally {
      await other.destroy();
    }
  });

  it('stops a write at the file-size limit', async () => {
    const result = await sandbox.exec(
      { shell: 'head -c 5000000 /dev/zero > big.bin' },
      { timeoutMs: 10_000, limits: { fileSizeBytes: 1_000_000 } },
    );
    expect(result.exitCode).not.toBe(0); // 153: SIGXFSZ
    expect((await sandbox.getFile('big.bin')).length).toBe(1_000_000);
  });

  it('feeds stdin, and no shell sources a .bashrc on the way', async () => {
    // Node's stdio pipes are sockets, which makes Debian's bash source ~/.bashrc (HOME is the
    // workdir) unless SHLVL says it is nested; on the host side that would run it unsandboxed.
    await sandbox.putFile('.bashrc', 'echo SOURCED; touch /tmp/toolmesh-sourced\n');
    const result = await sandbox.exec(
      { shell: 'cat; echo end' },
      { timeoutMs: 10_000, stdin: 'line one\nline two\n' },
    );
    expect(result.stdout.text).toBe('line one\nline two\nend\n');
    expect(existsSync('/tmp/toolmesh-sourced')).toBe(false);
    const bytes = await sandbox.exec(
      { argv: ['od', '-An', '-tu1'] },
      { timeoutMs: 10_000, stdin: new Uint8Array([0, 7, 255]) },
    );
    expect(bytes.stdout.text.trim().split(/\s+/)).toEqual(['0', '7', '255']);
  });

  it('runs several commands of one sandbox at once', async () => {
    const results = await Promise.all(
      [1, 2, 3].map((n) => sandbox.exec({ shell: `echo ${n}` }, { timeoutMs: 10_000 })),
    );
    expect(results.map((r) => r.stdout.text)).toEqual(['1\n', '2\n', '3\n']);
  });
});
