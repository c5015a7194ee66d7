// Red team, sandbox disk: a tenant must not fill the host's disk through its session. Each
// session's files are held to sandbox.disk_bytes (packages/sandbox/src/disk.ts): one file past
// it, many files under it each, and the private /tmp; the call that passes it fails with code
// `disk_full` and its writes stop at the limit; a full session can still free space. Run once
// per mode of the service (root: commands as nobody; unprivileged: a child process as nobody).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';
import { serviceModes, startSkillsAs } from '../support/service-modes.ts';

const MIB = 1024 * 1024;
const DISK_BYTES = 32 * MIB;

let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh();
}, 120_000);
afterAll(async () => {
  await mesh?.close();
});

const shown = (r: { content: unknown }) => JSON.stringify(r.content);

describe.each(serviceModes)('$name', ({ mode }) => {
  let stop: (() => Promise<void>) | undefined;
  let project: { id: string; key: string };
  beforeAll(async () => {
    const service = await startSkillsAs(mesh, mode, {
      CG__SANDBOX__DISK_BYTES: String(DISK_BYTES),
    });
    stop = () => service.stop();
    project = await mesh.api.createProject();
  }, 120_000);
  afterAll(async () => {
    await stop?.();
  });

  const run = (command: string) =>
    mesh.client.callTool({
      project: project.id,
      channel: 'main',
      tool: 'skills.run_cmd',
      arguments: { session_id: 'filler', command },
      timeoutMs: 60_000,
    });
  const usedBytes = async (): Promise<number> => {
    const r = await run('du -sB1 . | cut -f1');
    expect(r.status, shown(r)).toBe('succeeded');
    return Number((r.content.result as { stdout: string }).stdout.trim());
  };

  describe('red team: filling the disk', () => {
    it('one file past the limit: disk_full, and the file stops at the limit', async () => {
      const r = await run(`head -c ${2 * DISK_BYTES} /dev/zero > big.bin; echo wrote`);
      expect(r.status, shown(r)).toBe('failed');
      expect(r.content.error?.code).toBe('disk_full');
      expect(r.content.error?.details).toMatchObject({ limit: 'disk' });
      expect(await usedBytes()).toBeLessThanOrEqual(DISK_BYTES);
    });

    it('a full session still deletes, and then writes again', async () => {
      const refused = await run('echo more > more.txt');
      expect(refused.status, shown(refused)).toBe('failed');
      expect(refused.content.error?.code).toBe('disk_full');
      const freed = await run('rm -f big.bin more.txt');
      expect(freed.status, shown(freed)).toBe('succeeded');
      const r = await run('echo ok > small.txt && cat small.txt');
      expect(r.status, shown(r)).toBe('succeeded');
      expect((r.content.result as { stdout: string }).stdout).toBe('ok\n');
    });

    it('many files, each under the limit: the command is stopped, disk_full', async () => {
      const r = await run(
        'for i in $(seq 1 128); do head -c 1048576 /dev/zero > f$i.bin; sleep 0.05; done; echo wrote-all',
      );
      expect(r.status, shown(r)).toBe('failed');
      expect(r.content.error?.code).toBe('disk_full');
      expect(shown(r)).not.toContain('wrote-all');
      const cleanup = await run('rm -f f*.bin');
      expect(cleanup.status, shown(cleanup)).toBe('succeeded');
    });

    it('the private /tmp is held to the same size', async () => {
      const r = await run(
        `head -c ${2 * DISK_BYTES} /dev/zero > /tmp/fill; stat -c %s /tmp/fill; rm -f /tmp/fill`,
      );
      const size = Number((r.content.result as { stdout: string } | undefined)?.stdout.trim());
      expect(size, shown(r)).toBeLessThanOrEqual(DISK_BYTES);
    });
  });
});
