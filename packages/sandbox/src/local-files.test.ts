// File transfer stays inside the workdir: relative paths only, no `..` out, and no symbolic
// link left by a sandboxed command can steer the host (which writes as root) elsewhere.
import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Sandbox } from './provider.ts';
import { SESSION, useLocalProvider } from './test-support.ts';

const fixture = useLocalProvider();
let sandbox: Sandbox;

beforeAll(async () => {
  sandbox = await fixture.provider.create({ key: SESSION });
});
afterAll(async () => {
  await sandbox?.destroy();
});

describe('files', () => {
  it('puts a file the command reads, and gets a file the command wrote', async () => {
    await sandbox.putFile('inputs/data.txt', 'from the host\n');
    await sandbox.putFile('inputs/bytes.bin', new Uint8Array([0, 1, 2, 255]));
    const result = await sandbox.exec(
      {
        shell:
          'cat inputs/data.txt; mkdir -p out && printf made > out/result.txt; od -An -tu1 inputs/bytes.bin',
      },
      { timeoutMs: 10_000 },
    );
    expect(result.stdout.text).toMatch(/^from the host\n\s+0\s+1\s+2\s+255\n$/);
    expect((await sandbox.getFile('out/result.txt')).toString()).toBe('made');
    expect((await sandbox.getFile('./out/../out/result.txt')).toString()).toBe('made');
  });

  it('refuses paths that leave the workdir', async () => {
    for (const path of ['../escape.txt', 'a/../../escape.txt', '/etc/passwd', '', '.', 'x\0y']) {
      await expect(sandbox.getFile(path), path).rejects.toMatchObject({ reason: 'path_escape' });
      await expect(sandbox.putFile(path, 'x'), path).rejects.toMatchObject({
        reason: 'path_escape',
      });
    }
    expect(existsSync(join(sandbox.workdir, '..', 'escape.txt'))).toBe(false);
  });

  it('does not follow symbolic links a command left behind', async () => {
    const target = join(sandbox.workdir, '..', 'meta.json'); // outside the workdir
    const before = await readFile(target, 'utf8');
    await sandbox.exec(
      { shell: `ln -s ${target} meta-link; ln -s .. up; ln -s /etc etc-link; mkdir -p real` },
      { timeoutMs: 10_000 },
    );
    await expect(sandbox.getFile('meta-link')).rejects.toMatchObject({ reason: 'path_escape' });
    await expect(sandbox.putFile('meta-link', 'overwritten')).rejects.toMatchObject({
      reason: 'path_escape',
    });
    await expect(sandbox.getFile('up/meta.json')).rejects.toMatchObject({ reason: 'path_escape' });
    await expect(sandbox.putFile('etc-link/toolmesh-evil', 'x')).rejects.toMatchObject({
      reason: 'path_escape',
    });
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, cwd: 'etc-link' }),
    ).rejects.toMatchObject({
      reason: 'path_escape',
    });
    expect(await readFile(target, 'utf8')).toBe(before);
    expect(existsSync('/etc/toolmesh-evil')).toBe(false);
    await sandbox.putFile('real/fine.txt', 'ok');
    expect((await sandbox.getFile('real/fine.txt')).toString()).toBe('ok');
  });

  it('says not_found for a missing file or a directory', async () => {
    await expect(sandbox.getFile('missing.txt')).rejects.toMatchObject({
      reason: 'not_found',
      code: 'invalid_arguments',
    });
    await expect(sandbox.getFile('inputs')).rejects.toMatchObject({ reason: 'not_found' });
    await expect(
      sandbox.exec({ argv: ['true'] }, { timeoutMs: 10_000, cwd: 'nowhere' }),
    ).rejects.toMatchObject({
      reason: 'not_found',
    });
  });

  it('reopens a sandbox by id with its files, and forgets it once destroyed', async () => {
    const other = await fixture.provider.create({ key: { ...SESSION, session: 'reopen' } });
    await other.putFile('kept.txt', 'still here');
    await other.close();
    await expect(other.getFile('kept.txt')).rejects.toMatchObject({ reason: 'closed' });
    const again = await fixture.provider.open(other.id);
    expect(again?.key).toEqual({ ...SESSION, session: 'reopen' });
    expect(
      (await again!.exec({ argv: ['cat', 'kept.txt'] }, { timeoutMs: 10_000 })).stdout.text,
    ).toBe('still here');
    await fixture.provider.destroy(other.id);
    expect(existsSync(other.workdir)).toBe(false);
    expect(await fixture.provider.open(other.id)).toBeUndefined();
    expect(await fixture.provider.open('../../etc')).toBeUndefined();
    await fixture.provider.destroy(other.id); // a second destroy is not an error
  });
});
