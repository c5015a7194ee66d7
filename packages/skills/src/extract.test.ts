import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { skillPackageErrorCodeOf } from './errors.ts';
import { extractSkillZip } from './extract.ts';
import { inspectSkillZip } from './package.ts';
import { buildZip, patchEntry, replaceBytes, skillEntries, skillMd } from './zip-fixtures.ts';

let base: string;
beforeEach(async () => {
  base = await mkdtemp(join(tmpdir(), 'skills-extract-'));
});
afterEach(async () => {
  await rm(base, { recursive: true, force: true });
});

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (err) {
    return skillPackageErrorCodeOf(err) ?? `unexpected: ${String(err)}`;
  }
  throw new Error('expected a rejection');
}

describe('extractSkillZip', () => {
  it('extracts the root folder and returns the same package inspect does', async () => {
    const zip = await buildZip(skillEntries());
    const dest = join(base, 'work', 'session-1');
    const pkg = await extractSkillZip(zip, dest);
    expect(pkg).toEqual(await inspectSkillZip(zip));
    expect(await readdir(dest)).toEqual(['demo-skill']);
    expect(await readFile(join(dest, 'demo-skill', 'scripts', 'run.sh'), 'utf8')).toBe(
      '#!/bin/sh\necho hi\n',
    );
    expect((await stat(join(dest, 'demo-skill', 'scripts', 'run.sh'))).mode & 0o111).not.toBe(0);
    expect((await stat(join(dest, 'demo-skill', 'SKILL.md'))).mode & 0o111).toBe(0);
    // Only the destination was added beside its parent: no staging folder left.
    expect(await readdir(join(base, 'work'))).toEqual(['session-1']);
  });

  it('strips the root folder on request, into an existing empty folder', async () => {
    const dest = join(base, 'skill');
    await mkdir(dest);
    await extractSkillZip(await buildZip(skillEntries()), dest, {}, { stripRoot: true });
    expect((await readdir(dest)).sort()).toEqual(['SKILL.md', 'data', 'scripts']);
    expect(await readFile(join(dest, 'data', 'readme.txt'), 'utf8')).toHaveLength(5000);
  });

  it('refuses a destination that is not empty, and leaves it as it was', async () => {
    const dest = join(base, 'skill');
    await mkdir(dest);
    await writeFile(join(dest, 'keep.txt'), 'mine');
    expect(await codeOf(extractSkillZip(await buildZip(skillEntries()), dest))).toBe(
      'destination_exists',
    );
    expect(await readdir(dest)).toEqual(['keep.txt']);
    expect(await readdir(base)).toEqual(['skill']);
  });

  it('never writes through a symlink planted at the destination', async () => {
    const outside = join(base, 'outside');
    await mkdir(outside);
    await symlink(outside, join(base, 'skill'));
    expect(await codeOf(extractSkillZip(await buildZip(skillEntries()), join(base, 'skill')))).toBe(
      'destination_exists',
    );
    expect(await readdir(outside)).toEqual([]);
  });

  it('writes nothing for a zip with a traversal entry', async () => {
    const zip = await buildZip([
      { name: 'demo-skill/SKILL.md', data: skillMd('demo-skill') },
      { name: 'demo-skill/QQ/QQ/escaped.txt', data: 'x' },
    ]);
    const dest = join(base, 'a', 'b');
    expect(await codeOf(extractSkillZip(replaceBytes(zip, 'QQ', '..'), dest))).toBe('unsafe_path');
    expect(await readdir(join(base, 'a'))).toEqual([]);
    expect(await readdir(base)).toEqual(['a']);
  });

  it('removes what it wrote when a bomb is found halfway', async () => {
    const honest = await buildZip([
      ...skillEntries(),
      { name: 'demo-skill/zz-bomb.bin', data: Buffer.alloc(32 * 1024 * 1024) },
    ]);
    const lying = patchEntry(honest, 'demo-skill/zz-bomb.bin', { uncompressedSize: 10 });
    const dest = join(base, 'skill');
    expect(await codeOf(extractSkillZip(lying, dest, { maxUncompressedBytes: 1024 * 1024 }))).toBe(
      'uncompressed_too_large',
    );
    expect(await readdir(base)).toEqual([]);
  });
});
