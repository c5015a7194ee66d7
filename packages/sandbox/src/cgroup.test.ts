// Cgroups a killed service left behind are pruned when the next provider (or reaper) starts: an
// empty command cgroup made long ago goes, with its sandbox's when that is left empty; a young
// one stays (a launcher may be about to join it).
import { randomBytes } from 'node:crypto';
import { mkdir, rmdir, stat, utimes } from 'node:fs/promises';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { probeSandboxCgroups } from './cgroup.ts';

const probe = await probeSandboxCgroups();

describe.runIf(probe !== undefined)('stale cgroups', () => {
  it('prunes an old empty command cgroup and its empty sandbox, keeps a young one', async () => {
    const base = probe!.base;
    const stale = join(base, `lsb_${randomBytes(10).toString('hex')}`);
    const young = join(base, `lsb_${randomBytes(10).toString('hex')}`);
    await mkdir(join(stale, 'old-call'), { recursive: true });
    await mkdir(join(young, 'new-call'), { recursive: true });
    const past = new Date(Date.now() - 2 * 60 * 60 * 1000);
    await utimes(join(stale, 'old-call'), past, past);
    try {
      await probeSandboxCgroups();
      await expect(stat(stale)).rejects.toThrow();
      expect((await stat(join(young, 'new-call'))).isDirectory()).toBe(true);
    } finally {
      for (const dir of [join(stale, 'old-call'), stale, join(young, 'new-call'), young]) {
        await rmdir(dir).catch(() => undefined);
      }
    }
  });
});
