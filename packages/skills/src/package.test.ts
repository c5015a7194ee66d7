import { createHash } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { buffer } from 'node:stream/consumers';
import { describe, expect, it } from 'vitest';
import { DEFAULT_SKILL_ZIP_LIMITS, resolveLimits } from './limits.ts';
import { inspectSkillZip } from './package.ts';
import { openSkillZip } from './zip-reader.ts';
import {
  buildZip,
  codeFor,
  failure,
  patchEntry,
  replaceBytes,
  skillEntries,
  skillMd,
  withSkillMd,
} from './zip-fixtures.ts';

const MiB = 1024 * 1024;

describe('inspectSkillZip', () => {
  it('describes a valid skill: name, description, all front matter, sha256, files', async () => {
    const zip = await buildZip(skillEntries());
    const pkg = await inspectSkillZip(zip);
    expect(pkg).toEqual({
      name: 'demo-skill',
      description: 'Draws a picture.',
      frontMatter: {
        name: 'demo-skill',
        description: 'Draws a picture.',
        license: 'MIT',
        tags: ['a', 'b'],
      },
      // Kept above, and reported: the Agent Skills format has no `tags`.
      unknownFields: ['tags'],
      sha256: createHash('sha256').update(zip).digest('hex'),
      sizeBytes: zip.length,
      files: [
        {
          path: 'SKILL.md',
          size: Buffer.byteLength(
            skillMd('demo-skill', 'Draws a picture.', 'license: MIT\ntags: [a, b]\n'),
          ),
        },
        { path: 'data/readme.txt', size: 5000 },
        { path: 'scripts/run.sh', size: 18 },
      ],
    });
  });

  it('reads a zip from a path, and accepts one without folder entries or with __MACOSX', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'skills-'));
    try {
      const zip = await buildZip([
        { name: 'demo-skill/SKILL.md', data: skillMd('demo-skill') },
        { name: '__MACOSX/demo-skill/._SKILL.md', data: 'resource fork' },
      ]);
      const path = join(dir, 'skill.zip');
      await writeFile(path, zip);
      const pkg = await inspectSkillZip(path);
      expect(pkg.name).toBe('demo-skill');
      expect(pkg.files).toEqual([{ path: 'SKILL.md', size: skillMd('demo-skill').length }]);
      expect((await failure(path, { maxZipBytes: 10 })).code).toBe('zip_too_large');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it('exports sensible default limits', () => {
    expect(DEFAULT_SKILL_ZIP_LIMITS).toEqual({
      maxZipBytes: 20 * MiB,
      maxEntries: 2000,
      maxUncompressedBytes: 100 * MiB,
    });
  });

  describe('refuses', () => {
    it('not_a_zip', async () => {
      expect(await codeFor(Buffer.from('this is plain text, not a zip archive at all'))).toBe(
        'not_a_zip',
      );
      expect(await codeFor(Buffer.alloc(0))).toBe('not_a_zip');
    });

    it('zip_too_large', async () => {
      const zip = await buildZip(skillEntries());
      const err = await failure(zip, { maxZipBytes: zip.length - 1 });
      expect(err.code).toBe('zip_too_large');
      expect(err.details).toMatchObject({ sizeBytes: zip.length });
    });

    it('too_many_entries', async () => {
      expect(await codeFor(skillEntries(), { maxEntries: 3 })).toBe('too_many_entries');
    });

    it('uncompressed_too_large by the central directory', async () => {
      const entries = [
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/a.bin', data: Buffer.alloc(6 * MiB) },
        { name: 'demo-skill/b.bin', data: Buffer.alloc(6 * MiB) },
      ];
      const err = await failure(await buildZip(entries), { maxUncompressedBytes: 10 * MiB });
      expect(err.code).toBe('uncompressed_too_large');
      expect(err.details).toMatchObject({ declared: expect.any(Number) as number });
    });

    it('uncompressed_too_large while inflating when the central directory lies', async () => {
      // 64 MiB of zeros deflate to ~64 KiB; the headers are patched to claim 1000 bytes, so
      // the directory's sum is far under the limit and only the inflating guard can notice.
      const honest = await buildZip([
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/bomb.bin', data: Buffer.alloc(64 * MiB) },
      ]);
      const lying = patchEntry(honest, 'demo-skill/bomb.bin', { uncompressedSize: 1000 });
      const limits = { maxUncompressedBytes: 10 * MiB };
      const err = await failure(lying, limits);
      expect(err.code).toBe('uncompressed_too_large');
      // `declared` shows which check fired: the entry's own claim, not the 10 MiB total.
      expect(err.details).toMatchObject({ entry: 'demo-skill/bomb.bin', declared: 1000 });

      // It fails on the first chunk past the claim: the running total of inflated bytes, which
      // the guard keeps chunk by chunk, stops at one chunk (zlib's are 16 KiB), not 64 MiB.
      const opened = await openSkillZip(lying, resolveLimits(limits));
      try {
        const bomb = opened.entries.find((e) => e.path === 'demo-skill/bomb.bin')!;
        const counter = { total: 0 };
        await expect(buffer(opened.open(bomb, counter))).rejects.toMatchObject({
          code: 'uncompressed_too_large',
        });
        expect(counter.total).toBeGreaterThan(1000);
        expect(counter.total).toBeLessThanOrEqual(MiB);
      } finally {
        opened.zip.close();
      }
    });

    it('uncompressed_too_large fast for a 200 MiB bomb against a 10 MiB limit', async () => {
      const zip = await buildZip([
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/zeros.bin', data: Buffer.alloc(200 * MiB) },
      ]);
      expect(zip.length).toBeLessThan(MiB);
      const limits = { maxUncompressedBytes: 10 * MiB };
      const err = await failure(zip, limits);
      expect(err.code).toBe('uncompressed_too_large');
      // Refused from the central directory, before any inflating: the sum the directory
      // declares, no entry named (the inflating guard names the entry it was reading) ...
      expect(err.details['declared']).toBeGreaterThan(200 * MiB);
      expect(err.details).not.toHaveProperty('entry');
      // ... and it is opening the zip that refuses it, which reads no entry's data at all.
      await expect(openSkillZip(zip, resolveLimits(limits))).rejects.toMatchObject({
        code: 'uncompressed_too_large',
      });
    });

    it.each([
      ['path traversal', 'demo-skill/QQ/evil.txt', 'QQ', '..'],
      ['a traversal to the top', 'QQ/demo-skill/evil.txt', 'QQ', '..'],
      ['an absolute path', 'Qdemo-skill/abs.txt', 'Qdemo', '/demo'],
      ['a backslash', 'demo-skill/aQb.txt', 'aQb', 'a\\b'],
      ['NUL', 'demo-skill/aQb.txt', 'aQb', 'a\0b'],
      ['a control byte', 'demo-skill/aQb.txt', 'aQb', 'a\u0001b'],
      ['a drive letter', 'QQdemo-skill/x.txt', 'QQdemo', 'C:demo'],
      ['an empty segment', 'demo-skill/aQb.txt', 'aQb', 'a//'],
    ])('unsafe_path: %s', async (_case, name, from, to) => {
      const zip = await buildZip([...withSkillMd(skillMd('demo-skill')), { name, data: 'x' }]);
      const err = await failure(replaceBytes(zip, from, to));
      expect(err.code).toBe('unsafe_path');
      expect(err.details['reason']).toEqual(expect.any(String));
    });

    it('unsafe_path: a control byte in a CP437 name, where it decodes to a glyph', async () => {
      const zip = await buildZip([
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/aQb.txt', data: 'x' },
      ]);
      // Clear the UTF-8 flag (bit 11): the name is then CP437, where 0x01 reads as '☺'.
      const cp437 = patchEntry(replaceBytes(zip, 'aQb', 'a\u0001b'), 'demo-skill/a\u0001b.txt', {
        flags: 0,
      });
      const err = await failure(cp437);
      expect(err.code).toBe('unsafe_path');
      expect(err.details['entry']).toBe('demo-skill/a☺b.txt');
    });

    it('symlink', async () => {
      const entries = [
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/link', data: '/etc/passwd', mode: 0o120777 },
      ];
      expect(await codeFor(entries)).toBe('symlink');
    });

    it('encrypted entries, traditional and strong', async () => {
      const zip = await buildZip([
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/secret.txt', data: 'hidden', compress: false },
      ]);
      expect(await codeFor(patchEntry(zip, 'demo-skill/secret.txt', { flags: 0x1 }))).toBe(
        'encrypted',
      );
      expect(await codeFor(patchEntry(zip, 'demo-skill/secret.txt', { flags: 0x41 }))).toBe(
        'encrypted',
      );
    });

    it('unsupported_compression and corrupt_zip', async () => {
      const zip = await buildZip([
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/a.txt', data: 'some text here' },
      ]);
      expect(await codeFor(patchEntry(zip, 'demo-skill/a.txt', { method: 12 }))).toBe(
        'unsupported_compression',
      );
      expect(await codeFor(patchEntry(zip, 'demo-skill/a.txt', { crc32: 0xdeadbeef }))).toBe(
        'corrupt_zip',
      );
      expect(await codeFor(patchEntry(zip, 'demo-skill/a.txt', { uncompressedSize: 5000 }))).toBe(
        'corrupt_zip',
      );
    });

    it('duplicate_entry', async () => {
      const twice = [...withSkillMd(skillMd('demo-skill')), ...withSkillMd('---\nname: x\n---\n')];
      expect(await codeFor(twice)).toBe('duplicate_entry');
      const fileAsFolder = [
        ...withSkillMd(skillMd('demo-skill')),
        { name: 'demo-skill/a', data: 'file' },
        { name: 'demo-skill/a/b', data: 'inside a file' },
      ];
      expect(await codeFor(fileAsFolder)).toBe('duplicate_entry');
    });

    it('no_root_folder', async () => {
      expect(await codeFor([{ name: 'SKILL.md', data: skillMd('demo-skill') }])).toBe(
        'no_root_folder',
      );
      expect(
        await codeFor([...withSkillMd(skillMd('demo-skill')), { name: 'stray.txt', data: 'x' }]),
      ).toBe('no_root_folder');
      expect(await codeFor([])).toBe('no_root_folder');
    });

    it('multiple_roots', async () => {
      const entries = [
        ...withSkillMd(skillMd('demo-skill')),
        ...withSkillMd(skillMd('other'), 'other'),
      ];
      expect(await codeFor(entries)).toBe('multiple_roots');
    });

    it('missing_skill_md', async () => {
      expect(await codeFor([{ name: 'demo-skill/skill.md', data: skillMd('demo-skill') }])).toBe(
        'missing_skill_md',
      );
      expect(await codeFor([{ name: 'demo-skill/SKILL.md/', dir: true }])).toBe('missing_skill_md');
    });
  });
});
