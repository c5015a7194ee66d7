// Reopening E2B sandboxes by id with the real SDK against the fake server: reuse through
// /connect, the fallback for servers without it (running and paused), and a vanished sandbox,
// which must come back as undefined without anything being run again.
import { startFakeE2b, type FakeE2b } from '@toolmesh/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { providerFor, useFakeE2bProvider } from './e2b-test-support.ts';
import type { E2bSandboxProvider } from './e2b.ts';
import { marker, SESSION } from './test-support.ts';

const withConnect = useFakeE2bProvider();

describe('open() on a server with /connect', () => {
  it('reopens a sandbox from another provider: same key, the file written before is there', async () => {
    const first = await withConnect.provider.create({ key: SESSION });
    await first.putFile('state.txt', 'from call 1');
    await first.exec({ shell: 'echo installed > dep.txt' }, { timeoutMs: 10_000 });
    await first.close();

    const again = await withConnect.other.open(first.id);
    expect(again).toBeDefined();
    expect(again!.key).toEqual(SESSION);
    expect((await again!.getFile('state.txt')).toString()).toBe('from call 1');
    const read = await again!.exec({ shell: 'cat dep.txt' }, { timeoutMs: 10_000 });
    expect(read.stdout.text).toBe('installed\n');
    expect(withConnect.other.connectRoute).toBe(true);
    await again!.destroy();
  });

  it('reopens a paused sandbox: /connect resumes it', async () => {
    const sandbox = await withConnect.provider.create({ key: SESSION });
    await sandbox.putFile('kept.txt', 'kept while paused');
    withConnect.fake.pause(sandbox.id);
    const again = await withConnect.other.open(sandbox.id);
    expect((await again!.getFile('kept.txt')).toString()).toBe('kept while paused');
    expect(withConnect.fake.sandboxes().find((s) => s.id === sandbox.id)?.state).toBe('running');
    await again!.destroy();
  });

  it('answers undefined for a vanished sandbox and never runs its command again', async () => {
    const tag = marker();
    const sandbox = await withConnect.provider.create({ key: SESSION });
    // The output says "not found": that must not make anyone think the sandbox is gone.
    const result = await sandbox.exec(
      { shell: `echo "${tag}: No such file or directory, not found" >&2; exit 1` },
      { timeoutMs: 10_000 },
    );
    expect(result.exitCode).toBe(1);
    expect(result.stderr.text).toContain('not found');
    expect(await withConnect.other.open(sandbox.id)).toBeDefined();

    await withConnect.fake.vanish(sandbox.id);
    expect(await withConnect.other.open(sandbox.id)).toBeUndefined();
    expect(await withConnect.provider.open(sandbox.id)).toBeUndefined();
    expect(withConnect.fake.starts(tag)).toHaveLength(1);
    await sandbox.destroy();
  });

  it('refuses a command in a sandbox that vanished, saying it is gone and did not start', async () => {
    const tag = marker();
    const sandbox = await withConnect.provider.create({ key: SESSION });
    await withConnect.fake.vanish(sandbox.id);
    await expect(
      sandbox.exec({ shell: `echo ${tag}` }, { timeoutMs: 10_000 }),
    ).rejects.toMatchObject({ reason: 'closed', details: { gone: true, started: false } });
    // One Start was attempted and refused at the edge (502): nothing ran, nothing was retried.
    expect(withConnect.fake.starts(tag).map((r) => r.status)).toEqual([502]);
  });

  it('answers undefined for an id the server never had', async () => {
    expect(await withConnect.provider.open('isb-never-existed')).toBeUndefined();
  });
});

describe('open() on a server without /connect (the fallback)', () => {
  let fake: FakeE2b;
  let provider: E2bSandboxProvider;
  let other: E2bSandboxProvider;
  beforeAll(async () => {
    fake = await startFakeE2b({ connectRoute: false });
    provider = providerFor(fake);
    other = providerFor(fake);
  });
  afterAll(async () => {
    await provider?.close();
    await other?.close();
    await fake?.stop();
  });

  const routes = (id: string) =>
    fake
      .requests()
      .filter((r) => r.sandboxId === id && /^\/(v2\/)?sandboxes\//.test(r.path))
      .map((r) => `${r.method} ${r.path} ${r.status}`);

  it('reaches a running sandbox through its info: envd token and domain', async () => {
    const sandbox = await provider.create({ key: SESSION });
    await sandbox.putFile('state.txt', 'before');
    const again = await other.open(sandbox.id);
    expect(again!.key).toEqual(SESSION);
    expect((await again!.getFile('state.txt')).toString()).toBe('before');
    expect(other.connectRoute).toBe(false);
    expect(routes(sandbox.id)).toEqual([
      `GET /sandboxes/${sandbox.id} 200`,
      `POST /v2/sandboxes/${sandbox.id}/connect 404`,
      `GET /sandboxes/${sandbox.id} 200`,
      `POST /sandboxes/${sandbox.id}/timeout 204`,
    ]);
    await again!.destroy();
  });

  it('resumes a paused sandbox first, and its stopped process runs on', async () => {
    const sandbox = await provider.create({ key: SESSION });
    await sandbox.putFile('state.txt', 'paused state');
    const service = await sandbox.spawn({ shell: 'sleep 30' });
    fake.pause(sandbox.id);
    const again = await other.open(sandbox.id);
    expect((await again!.getFile('state.txt')).toString()).toBe('paused state');
    expect(routes(sandbox.id).slice(-1)).toEqual([`POST /sandboxes/${sandbox.id}/resume 201`]);
    expect(routes(sandbox.id).filter((r) => r.includes('/connect'))).toEqual([]);
    const view = fake.sandboxes().find((s) => s.id === sandbox.id);
    expect(view).toMatchObject({ state: 'running', pids: [service.pid] });
    await service.kill();
    await again!.destroy();
  });

  it('answers undefined for a vanished sandbox without running anything', async () => {
    const tag = marker();
    const sandbox = await provider.create({ key: SESSION });
    await sandbox.exec({ shell: `echo ${tag}` }, { timeoutMs: 10_000 });
    await fake.vanish(sandbox.id);
    expect(await other.open(sandbox.id)).toBeUndefined();
    expect(fake.starts(tag)).toHaveLength(1);
  });
});
