// The fake E2B server against the real `e2b` SDK: create, commands (exit codes, background,
// kill, stdin), files both ways, connect, pause and resume, kill, and the switches.
import { readFile } from 'node:fs/promises';
import { CommandExitError, Sandbox, SandboxNotFoundError } from 'e2b';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeE2b, type FakeE2b } from './fake-e2b.ts';

let fake: FakeE2b;
const opts = () => ({ apiKey: fake.apiKey, apiUrl: fake.url, sandboxUrl: fake.url });

beforeAll(async () => {
  fake = await startFakeE2b();
});
afterAll(async () => {
  await fake?.stop();
});

describe('fake E2B server with the real SDK', () => {
  it('creates a sandbox and runs a command for real', async () => {
    const sbx = await Sandbox.create('base', { ...opts(), metadata: { who: 'test' } });
    const result = await sbx.commands.run('echo hello; echo oops >&2; pwd', {
      envs: { GREETING: 'x' },
    });
    expect(result.exitCode).toBe(0);
    expect(result.stdout).toBe(`hello\n${fake.hostPath(sbx.sandboxId, '/home/user')}\n`);
    expect(result.stderr).toBe('oops\n');
    const info = await Sandbox.getInfo(sbx.sandboxId, opts());
    expect(info).toMatchObject({
      sandboxId: sbx.sandboxId,
      state: 'running',
      metadata: { who: 'test' },
    });
    await sbx.kill();
  });

  it('reports a non-zero exit as CommandExitError with output and exit code', async () => {
    const sbx = await Sandbox.create('base', opts());
    const err: unknown = await sbx.commands
      .run('echo out; echo err >&2; exit 3')
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(CommandExitError);
    expect(err).toMatchObject({ exitCode: 3, stdout: 'out\n', stderr: 'err\n' });
    await sbx.kill();
  });

  it('runs background commands that can be listed, connected to, fed and killed', async () => {
    const sbx = await Sandbox.create('base', opts());
    const cat = await sbx.commands.run('cat', { background: true, stdin: true });
    await sbx.commands.sendStdin(cat.pid, 'piped\n');
    await sbx.commands.closeStdin(cat.pid);
    expect((await cat.wait()).stdout).toBe('piped\n');

    const sleeper = await sbx.commands.run('sleep 30', { background: true });
    expect((await sbx.commands.list()).map((p) => p.pid)).toContain(sleeper.pid);
    const again = await sbx.commands.connect(sleeper.pid);
    expect(await sbx.commands.kill(sleeper.pid)).toBe(true);
    const ended: unknown = await again.wait().catch((e: unknown) => e);
    expect(ended).toMatchObject({ exitCode: -1, error: 'signal: killed' });
    expect(await sbx.commands.kill(sleeper.pid)).toBe(false);
    await sbx.kill();
  });

  it('moves files both ways through /files and the filesystem RPCs', async () => {
    const sbx = await Sandbox.create('base', opts());
    await sbx.files.write('/home/user/dir/a.txt', 'written by the SDK');
    expect(await readFile(fake.hostPath(sbx.sandboxId, '/home/user/dir/a.txt'), 'utf8')).toBe(
      'written by the SDK',
    );
    await sbx.commands.run('printf "\\x00\\xff" > dir/b.bin');
    expect(Array.from(await sbx.files.read('dir/b.bin', { format: 'bytes' }))).toEqual([0, 255]);
    expect((await sbx.files.list('/home/user/dir')).map((e) => e.name)).toEqual(['a.txt', 'b.bin']);
    expect(await sbx.files.exists('/home/user/nope')).toBe(false);
    expect(await sbx.files.makeDir('/home/user/dir')).toBe(false);
    await sbx.files.remove('/home/user/dir/a.txt');
    await expect(sbx.files.read('/home/user/dir/a.txt')).rejects.toThrow();
    await sbx.kill();
  });

  it('connects to a paused sandbox and resumes it; pause stops its processes', async () => {
    const sbx = await Sandbox.create('base', opts());
    await sbx.files.write('keep.txt', 'kept');
    fake.pause(sbx.sandboxId);
    expect((await Sandbox.getInfo(sbx.sandboxId, opts())).state).toBe('paused');
    await expect(sbx.commands.run('true')).rejects.toThrow();
    const again = await Sandbox.connect(sbx.sandboxId, opts());
    expect(await again.files.read('keep.txt')).toBe('kept');
    expect((await Sandbox.getInfo(sbx.sandboxId, opts())).state).toBe('running');
    await again.kill();
  });

  it('answers 404 on connect without the route, and on everything for a vanished sandbox', async () => {
    const sbx = await Sandbox.create('base', opts());
    fake.setConnectRoute(false);
    try {
      // A router's plain-text 404: the SDK reports it as a SandboxError with the status.
      await expect(Sandbox.connect(sbx.sandboxId, opts())).rejects.toMatchObject({
        statusCode: 404,
      });
      expect(fake.requests().at(-1)).toMatchObject({
        path: `/v2/sandboxes/${sbx.sandboxId}/connect`,
        status: 404,
      });
    } finally {
      fake.setConnectRoute(true);
    }
    await fake.vanish(sbx.sandboxId);
    await expect(Sandbox.getInfo(sbx.sandboxId, opts())).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
    await expect(Sandbox.connect(sbx.sandboxId, opts())).rejects.toBeInstanceOf(
      SandboxNotFoundError,
    );
    expect(await Sandbox.kill(sbx.sandboxId, opts())).toBe(false);
  });

  it('refuses a wrong API key and a wrong envd token', async () => {
    await expect(Sandbox.create('base', { ...opts(), apiKey: 'wrong' })).rejects.toThrow(
      /Unauthorized/,
    );
    const sbx = await Sandbox.create('base', opts());
    const forged = new Sandbox({
      ...opts(),
      sandboxId: sbx.sandboxId,
      envdVersion: '0.5.7',
      envdAccessToken: 'forged',
    });
    await expect(forged.commands.run('true')).rejects.toThrow();
    expect(fake.requests().at(-1)).toMatchObject({ rpc: 'process.Process/Start', status: 401 });
    await sbx.kill();
  });

  it('records each started command', async () => {
    const sbx = await Sandbox.create('base', opts());
    await sbx.commands.run('echo tm-record-marker');
    expect(fake.starts('tm-record-marker')).toHaveLength(1);
    expect(fake.starts('tm-record-marker')[0]).toMatchObject({
      sandboxId: sbx.sandboxId,
      command: ['/bin/bash', '-l', '-c', 'echo tm-record-marker'],
    });
    await sbx.kill();
    expect(fake.sandboxes().map((s) => s.id)).not.toContain(sbx.sandboxId);
  });

  it('pauses instead of killing a sandbox whose timeout passes, with keepPaused', async () => {
    const pausing = await startFakeE2b({ keepPaused: true });
    try {
      const o = { apiKey: pausing.apiKey, apiUrl: pausing.url, sandboxUrl: pausing.url };
      const sbx = await Sandbox.create('base', { ...o, timeoutMs: 1000 });
      // Poll for the state change; how soon it comes is not what this test checks.
      while (pausing.sandboxes()[0]?.state !== 'paused')
        await new Promise((r) => setTimeout(r, 50));
      expect((await Sandbox.getInfo(sbx.sandboxId, o)).state).toBe('paused');
      await Sandbox.kill(sbx.sandboxId, o);
    } finally {
      await pausing.stop();
    }
  });
});
