import { describe, expect, it } from 'vitest';
import { ArtifactError } from './errors.ts';
import { assertKey, assertPrefix, keyProblem } from './key.ts';
import { artifactKey, sanitizeFilename, skillZipKey, skillZipPrefix } from './keys.ts';

const SHA = 'a'.repeat(64);

function codeOf(fn: () => unknown): string {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ArtifactError);
    return (err as ArtifactError).code;
  }
  throw new Error('expected an ArtifactError, nothing was thrown');
}

describe('key rules', () => {
  it('accept relative a/b/c paths', () => {
    for (const key of ['a', 'a/b/c', 'skills/p/n/x.zip', 'a b/ü-ñ/file.tar.gz', 'x'.repeat(255)]) {
      expect(keyProblem(key)).toBeUndefined();
    }
  });

  it.each([
    ['empty', ''],
    ['absolute', '/etc/passwd'],
    ['parent segment', 'a/../b'],
    ['leading parent', '../b'],
    ['dot segment', 'a/./b'],
    ['empty segment', 'a//b'],
    ['trailing slash', 'a/b/'],
    ['backslash', 'a\\b'],
    ['NUL', 'a\0b'],
    ['control character', 'a\nb'],
    ['reserved dot segment', 'a/.hidden'],
    ['segment over 255 bytes', `a/${'x'.repeat(256)}`],
    ['key over 1024 bytes', Array.from({ length: 6 }, () => 'x'.repeat(200)).join('/')],
  ])('refuse %s with invalid_key', (_case, key) => {
    expect(codeOf(() => assertKey(key))).toBe('invalid_key');
  });

  it('refuse non-strings', () => {
    expect(codeOf(() => assertKey(42))).toBe('invalid_key');
  });

  it('prefixes may be empty, end in / or stop inside a segment', () => {
    for (const prefix of ['', 'a/', 'a/b', 'skills/p1/']) expect(assertPrefix(prefix)).toBe(prefix);
    for (const prefix of ['/a', 'a//', '../', 'a\\']) {
      expect(codeOf(() => assertPrefix(prefix))).toBe('invalid_key');
    }
  });
});

describe('key builders', () => {
  it('build skill zip keys from checked parts', () => {
    expect(skillZipKey('p1', 'my-skill', SHA)).toBe(`skills/p1/my-skill/${SHA}/skill.zip`);
    expect(skillZipPrefix('p1')).toBe('skills/p1/');
    expect(skillZipPrefix('p1', 'my-skill')).toBe('skills/p1/my-skill/');
    for (const bad of [
      () => skillZipKey('p/1', 'n', SHA),
      () => skillZipKey('p', '..', SHA),
      () => skillZipKey('p', 'x'.repeat(65), SHA),
      () => skillZipKey('p', 'n', 'A'.repeat(64)),
      () => skillZipKey('p', 'n', 'a'.repeat(63)),
    ]) {
      expect(codeOf(bad)).toBe('invalid_key');
    }
  });

  it('build artifact keys with the filename sanitized', () => {
    expect(artifactKey('p1', 'art_1', 'out.png')).toBe('artifacts/p1/art_1/out.png');
    expect(artifactKey('p1', 'art_1', '../../etc/passwd')).toBe('artifacts/p1/art_1/passwd');
    expect(codeOf(() => artifactKey('p1', 'a/b', 'x'))).toBe('invalid_key');
  });

  it('sanitize file names to one safe segment', () => {
    expect(sanitizeFilename('dir\\sub\\report.pdf')).toBe('report.pdf');
    expect(sanitizeFilename('a\0b\nc.txt')).toBe('abc.txt');
    expect(sanitizeFilename('.env')).toBe('_env');
    expect(sanitizeFilename('..')).toBe('_');
    expect(sanitizeFilename('')).toBe('file');
    expect(sanitizeFilename('dir/')).toBe('file');
    expect(sanitizeFilename('x'.repeat(500))).toHaveLength(200);
    const wide = sanitizeFilename('é'.repeat(200));
    expect(Buffer.byteLength(wide)).toBeLessThanOrEqual(255);
    expect(keyProblem(wide)).toBeUndefined();
  });
});
