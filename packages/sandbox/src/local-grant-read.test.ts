// grantRead: a host folder given to one sandbox is readable there, read-only, by every later
// command (warm or cold, and through a handle reopened by id), and stays hidden from every
// other sandbox.
import { chmod, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SESSION, useLocalProvider } from './test-support.ts';

const fixture = useLocalProvider();
let shared: string;

beforeAll(async () => {
  shared = await mkdtemp(join(tmpdir(), 'toolmesh-grant-'));
  await writeFile(join(shared, 'lib.txt'), 'from the host\n');
  // The sandbox user must be able to read it (it is not root when the service is).
  await chmod(shared, 0o755);
  await chmod(join(shared, 'lib.txt'), 0o644);
});
afterAll(async () => {
  await rm(shared, { recursive: true, force: true });
});

const script = (dir: string) =>
  `cat "${dir}/lib.txt" 2>/dev/null || echo hidden; touch "${dir}/new" 2>/dev/null && echo wrote || echo read-only`;

describe('grantRead', () => {
  it('shows the folder read-only to this sandbox only, also after a reopen', async () => {
    const granted = await fixture.provider.create({ key: SESSION });
    const other = await fixture.provider.create({ key: { ...SESSION, project: 'other' } });
    try {
      // A warm executor exists before the grant: the grant must reach later commands anyway.
      const before = await granted.exec({ shell: script(shared) }, { timeoutMs: 15_000 });
      expect(before.stdout.text).toContain('hidden');
      await granted.grantRead!(shared);
      const after = await granted.exec({ shell: script(shared) }, { timeoutMs: 15_000 });
      expect(after.stdout.text).toBe('from the host\nread-only\n');
      const reopened = await fixture.provider.open(granted.id);
      expect(reopened?.readPaths).toEqual([shared]);
      const again = await reopened!.exec({ shell: script(shared) }, { timeoutMs: 15_000 });
      expect(again.stdout.text).toContain('from the host');
      const peek = await other.exec({ shell: script(shared) }, { timeoutMs: 15_000 });
      expect(peek.stdout.text).toContain('hidden');
    } finally {
      await granted.destroy();
      await other.destroy();
    }
  }, 60_000);

  it('refuses a relative or unnormalized path', async () => {
    const sandbox = await fixture.provider.create({ key: SESSION });
    try {
      await expect(sandbox.grantRead!('relative/dir')).rejects.toMatchObject({
        reason: 'path_escape',
      });
      await expect(sandbox.grantRead!(`${shared}/../etc`)).rejects.toMatchObject({
        reason: 'path_escape',
      });
      expect(sandbox.readPaths).toEqual([]);
    } finally {
      await sandbox.destroy();
    }
  });
});
