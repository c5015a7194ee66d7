// Checks on one central-directory entry, before any of its data is read: a safe relative path,
// a regular file or folder (never a symlink or device), no encryption, a method we can inflate.
// Names are checked as raw bytes and as decoded text: in CP437 (the zip default) control bytes
// decode to printable glyphs (0x01 is '☺'), so a check on the text alone would miss them.
import yauzl from 'yauzl';
import type { Entry } from 'yauzl';
import { SkillPackageError } from './errors.ts';

const MAX_PATH_BYTES = 1024;
const MAX_SEGMENT_BYTES = 255;

// Unix file types in the high half of the external attributes (st_mode << 16).
const S_IFMT = 0o170000;
const S_IFLNK = 0o120000;
const S_IFREG = 0o100000;
const S_IFDIR = 0o040000;

// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** An entry that passed the checks, its path normalised (no trailing `/` on folders). */
export interface CheckedEntry {
  readonly path: string;
  readonly isDirectory: boolean;
  /** Declared uncompressed size; enforced while inflating. */
  readonly size: number;
  /** Whether the unix mode marks it executable (kept on extraction, nothing else is). */
  readonly executable: boolean;
  readonly entry: Entry;
}

function unsafe(name: string, reason: string): SkillPackageError {
  return new SkillPackageError(
    'unsafe_path',
    `zip entry ${JSON.stringify(name)} has an unsafe path: ${reason}`,
    { details: { entry: name, reason } },
  );
}

/** Why a decoded entry name is unsafe, or undefined when it is fine. */
export function pathProblem(name: string): string | undefined {
  if (name === '') return 'empty name';
  if (Buffer.byteLength(name) > MAX_PATH_BYTES) return `longer than ${MAX_PATH_BYTES} bytes`;
  if (name.includes('\0')) return 'contains NUL';
  if (CONTROL_CHARS.test(name)) return 'contains control characters';
  if (name.includes('\\')) return 'contains a backslash';
  if (name.startsWith('/')) return 'absolute path';
  if (/^[A-Za-z]:/.test(name)) return 'drive-letter path';
  const segments = (name.endsWith('/') ? name.slice(0, -1) : name).split('/');
  for (const segment of segments) {
    if (segment === '..') return 'path traversal (..)';
    if (segment === '.') return 'a . segment';
    if (segment === '') return 'an empty segment (//)';
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      return `a segment longer than ${MAX_SEGMENT_BYTES} bytes`;
    }
  }
  return undefined;
}

export function checkEntry(entry: Entry): CheckedEntry {
  const raw = entry.fileNameRaw;
  // strictFileNames: keep backslashes as they are, so they are refused rather than rewritten.
  const name = yauzl.getFileNameLowLevel(entry.generalPurposeBitFlag, raw, entry.extraFields, true);
  if (raw.some((byte) => byte < 0x20 || byte === 0x7f)) {
    throw unsafe(name, 'contains control characters');
  }
  const problem = pathProblem(name);
  if (problem !== undefined) throw unsafe(name, problem);

  const mode = (entry.externalFileAttributes >>> 16) & 0xffff;
  const type = mode & S_IFMT;
  if (type === S_IFLNK) {
    throw new SkillPackageError('symlink', `zip entry ${JSON.stringify(name)} is a symlink`, {
      details: { entry: name },
    });
  }
  if (type !== 0 && type !== S_IFREG && type !== S_IFDIR) {
    throw unsafe(name, `not a regular file or folder (mode ${type.toString(8)})`);
  }
  if (entry.isEncrypted()) {
    throw new SkillPackageError('encrypted', `zip entry ${JSON.stringify(name)} is encrypted`, {
      details: { entry: name },
    });
  }
  if (entry.compressionMethod !== 0 && entry.compressionMethod !== 8) {
    throw new SkillPackageError(
      'unsupported_compression',
      `zip entry ${JSON.stringify(name)} uses compression method ${entry.compressionMethod}; only stored and deflate are supported`,
      { details: { entry: name, method: entry.compressionMethod } },
    );
  }
  const isDirectory = name.endsWith('/') || type === S_IFDIR;
  return {
    path: name.endsWith('/') ? name.slice(0, -1) : name,
    isDirectory,
    size: entry.uncompressedSize,
    executable: (mode & 0o111) !== 0,
    entry,
  };
}
