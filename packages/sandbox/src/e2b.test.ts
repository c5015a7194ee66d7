// The e2b provider with the real `e2b` SDK against the fake E2B server: results, output tails,
// timeouts and cancels, background commands, files, the environment, destroy. Reopening and the
// /connect fallback are in e2b-open.test.ts.
import { existsSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import { FAKE_DOMAIN, useFakeE2bProvider } from './e2b-test-support.ts';
import { marker, SESSION } from './test-support.ts';

const fixture = useFakeE2bProvider();
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

/** Pids the fake still runs in the sandbox. */
function livePids(): readonly number[] {
  return fixture.fake.sandboxes().find((s) => s.id === sandbox.id)?.pids ?? [];
}

describe('e2b sandbox', () => {
  it('runs echo hi in the workdir: stdout, exit 0', async () => {
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
    expect(sandbox.workdir).toBe('/home/user/work');
    const pwd = await sandbox.exec({ shell: 'pwd' }, { timeoutMs: 10_000 });
    expect(pwd.stdout.text).toBe(`${fixture.fake.hostPath(sandbox.id, '/home/user/work')}\n`);
  });

  it('keeps stdout, stderr and the exit code of a failing command', async () => {
    const result = await sandbox.exec(
      { shell: 'echo partial output; echo the error >&2; exit 7' },
      { timeoutMs: 10_000 },
    );
    expect(result).toMatchObject({ exitCode: 7, signal: null, timedOut: false });
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
    expect(result.stdout.totalBytes).toBe(588_895);
    expect(Buffer.byteLength(result.stdout.text)).toBeLessThanOrEqual(1000);
    expect(result.stdout.text.endsWith('99999\n100000\n')).toBe(true);
    expect(result.stderr.text).toBe('the error at the end\n');
  });

  it('kills a command at its timeout and says so', async () => {
    const tag = marker();
    const result = await sandbox.exec(
      { shell: `echo started; sleep 30 # ${tag}` },
      { timeoutMs: 500 },
    );
    expect(result).toMatchObject({
      exitCode: null,
      signal: 'SIGKILL',
      timedOut: true,
      canceled: false,
    });
    expect(result.stdout.text).toBe('started\n');
    expect(livePids()).toEqual([]);
  });

  it('kills a command when its signal aborts', async () => {
    const controller = new AbortController();
    const running = sandbox.exec(
      { shell: 'echo waiting; sleep 30' },
      { timeoutMs: 60_000, signal: controller.signal },
    );
    // Abort once the command is visibly running, not after a guessed delay.
    while (livePids().length === 0) await new Promise((r) => setTimeout(r, 20));
    controller.abort();
    const result = await running;
    expect(result).toMatchObject({
      exitCode: null,
      signal: 'SIGKILL',
      timedOut: false,
      canceled: true,
    });
    expect(livePids()).toEqual([]);
  });

  it('runs background commands: wait for one, kill another', async () => {
    const quick = await sandbox.spawn({ shell: 'echo from the background; exit 4' });
    expect(quick.pid).toBeGreaterThan(0);
    expect(quick.procStartTime).toBeUndefined();
    expect(await quick.wait()).toMatchObject({
      exitCode: 4,
      stdout: { text: 'from the background\n' },
    });

    const service = await sandbox.spawn({ shell: 'sleep 30' });
    expect(livePids()).toContain(service.pid);
    const killed = await service.kill();
    expect(killed).toMatchObject({ exitCode: null, signal: 'SIGKILL' });
    expect(await service.wait()).toBe(killed);
    expect(livePids()).toEqual([]);
  });

  it('feeds stdin and closes it', async () => {
    const result = await sandbox.exec(
      { argv: ['cat'] },
      { timeoutMs: 10_000, stdin: 'line 1\nline 2\n' },
    );
    expect(result.stdout.text).toBe('line 1\nline 2\n');
  });

  it('moves files both ways at workdir-relative paths', async () => {
    const bytes = Uint8Array.from([0, 1, 2, 255, 254]);
    await sandbox.putFile('in/data.bin', bytes);
    await sandbox.putFile('note.txt', 'hello file');
    const listing = await sandbox.exec(
      { shell: 'wc -c < in/data.bin; cat note.txt' },
      { timeoutMs: 10_000 },
    );
    expect(listing.stdout.text).toBe('5\nhello file');
    await sandbox.exec(
      { shell: 'mkdir -p out && printf "made inside" > out/result.txt' },
      { timeoutMs: 10_000 },
    );
    expect((await sandbox.getFile('out/result.txt')).toString()).toBe('made inside');
    expect([...(await sandbox.getFile('in/data.bin'))]).toEqual([...bytes]);
  });

  it('refuses paths that escape the workdir and reports a missing file', async () => {
    await expect(sandbox.putFile('../escape.txt', 'x')).rejects.toMatchObject({
      reason: 'path_escape',
    });
    await expect(sandbox.getFile('/etc/passwd')).rejects.toMatchObject({ reason: 'path_escape' });
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, cwd: '../..' }),
    ).rejects.toMatchObject({
      reason: 'path_escape',
      code: 'invalid_arguments',
    });
    await expect(sandbox.getFile('no/such.txt')).rejects.toMatchObject({ reason: 'not_found' });
  });

  it('passes env values and argv with shell metacharacters verbatim', async () => {
    const nasty = `$(touch pwned) \`touch pwned2\` "quoted" 'single' ; | & > < * ? \\ $HOME\nline two`;
    const viaEnv = await sandbox.exec(
      { shell: 'printf %s "$NASTY"' },
      { timeoutMs: 10_000, env: { NASTY: nasty } },
    );
    expect(viaEnv.stdout.text).toBe(nasty);
    const viaArgv = await sandbox.exec({ argv: ['printf', '%s', nasty] }, { timeoutMs: 10_000 });
    expect(viaArgv.stdout.text).toBe(nasty);
    expect(existsSync(fixture.fake.hostPath(sandbox.id, '/home/user/work/pwned'))).toBe(false);
    expect(existsSync(fixture.fake.hostPath(sandbox.id, '/home/user/work/pwned2'))).toBe(false);
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, env: { 'A=B': 'x' } }),
    ).rejects.toMatchObject({ reason: 'invalid_env' });
  });

  it('asks E2B to deny egress except the allowed hosts', async () => {
    expect(fixture.fake.sandboxes().find((s) => s.id === sandbox.id)?.network).toEqual({
      denyOut: ['0.0.0.0/0'],
    });
    const open = await fixture.provider.create({
      key: SESSION,
      network: { allowedDomains: ['pypi.org'] },
    });
    expect(fixture.fake.sandboxes().find((s) => s.id === open.id)?.network).toEqual({
      denyOut: ['0.0.0.0/0'],
      allowOut: ['pypi.org'],
    });
    await open.destroy();
  });

  it('names the endpoint of a port the E2B way', () => {
    expect(sandbox.endpointOf?.(8080)).toBe(`8080-${sandbox.id}.${FAKE_DOMAIN}`);
  });

  it('destroys by id; a second destroy and an open afterwards find nothing', async () => {
    const doomed = await fixture.provider.create({ key: { ...SESSION, session: 'doomed' } });
    await doomed.spawn({ shell: 'sleep 30' });
    await fixture.provider.destroy(doomed.id);
    expect(fixture.fake.sandboxes().map((s) => s.id)).not.toContain(doomed.id);
    await fixture.provider.destroy(doomed.id);
    await doomed.destroy();
    expect(await fixture.provider.open(doomed.id)).toBeUndefined();
  });
});
