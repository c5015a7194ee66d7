// Test helpers: zips built with yazl, and byte patches for the hostile ones yazl refuses to
// make (traversal, backslashes, control bytes, encryption flags, a central directory that lies
// about sizes). Patches rewrite the central directory record, which is what readers trust, and
// the local header alike. Not exported from the package.
import { buffer } from 'node:stream/consumers';
import yazl from 'yazl';
import { SkillPackageError } from './errors.ts';
import type { SkillPackageErrorCode } from './errors.ts';
import type { SkillZipLimits } from './limits.ts';
import { inspectSkillZip } from './package.ts';

export interface FixtureEntry {
  name: string;
  data?: string | Buffer;
  /** A folder entry (yazl adds the trailing `/`). */
  dir?: boolean;
  /** Unix mode, file type bits included (0o120777 is a symlink). */
  mode?: number;
  compress?: boolean;
}

export async function buildZip(entries: readonly FixtureEntry[]): Promise<Buffer> {
  const zip = new yazl.ZipFile();
  for (const e of entries) {
    const options = {
      ...(e.mode === undefined ? {} : { mode: e.mode }),
      mtime: new Date('2024-01-01T00:00:00Z'),
    };
    if (e.dir === true) zip.addEmptyDirectory(e.name, options);
    else {
      const data = typeof e.data === 'string' ? Buffer.from(e.data) : (e.data ?? Buffer.alloc(0));
      zip.addBuffer(data, e.name, { ...options, compress: e.compress ?? true });
    }
  }
  zip.end();
  return buffer(zip.outputStream);
}

export function skillMd(name: string, description = 'Does a thing.', extra = ''): string {
  return `---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n# ${name}\n\nUse it well.\n`;
}

/** A valid skill folder's entries. */
export function skillEntries(name = 'demo-skill'): FixtureEntry[] {
  return [
    { name: `${name}/`, dir: true },
    {
      name: `${name}/SKILL.md`,
      data: skillMd(name, 'Draws a picture.', 'license: MIT\ntags: [a, b]\n'),
    },
    { name: `${name}/scripts/run.sh`, data: '#!/bin/sh\necho hi\n', mode: 0o100755 },
    { name: `${name}/data/readme.txt`, data: 'x'.repeat(5000) },
  ];
}

/** A skill folder whose SKILL.md is `md`. */
export const withSkillMd = (md: string | Buffer, root = 'demo-skill'): FixtureEntry[] => [
  { name: `${root}/SKILL.md`, data: md },
];

/** The error inspecting `data` fails with; throws if it does not fail as a SkillPackageError. */
export async function failure(
  data: Buffer | string,
  limits: Partial<SkillZipLimits> = {},
): Promise<SkillPackageError> {
  try {
    await inspectSkillZip(data, limits);
  } catch (err) {
    if (err instanceof SkillPackageError && err.message.length > 10) return err;
    throw new Error(`expected a SkillPackageError with a message, got ${String(err)}`, {
      cause: err,
    });
  }
  throw new Error('expected the zip to be refused');
}

/** The code a zip (or the zip of these entries) is refused with. */
export async function codeFor(
  entries: readonly FixtureEntry[] | Buffer,
  limits: Partial<SkillZipLimits> = {},
): Promise<SkillPackageErrorCode> {
  const zip = Buffer.isBuffer(entries) ? entries : await buildZip(entries);
  return (await failure(zip, limits)).code;
}

/** Replaces every occurrence of `from` with `to` (same byte length), e.g. in entry names. */
export function replaceBytes(zip: Buffer, from: string | Buffer, to: string | Buffer): Buffer {
  const a = Buffer.from(from);
  const b = Buffer.from(to);
  if (a.length !== b.length) throw new Error('replacement must keep the length');
  const out = Buffer.from(zip);
  let found = 0;
  for (let i = out.indexOf(a); i >= 0; i = out.indexOf(a, i + a.length)) {
    b.copy(out, i);
    found++;
  }
  if (found === 0) throw new Error(`${a.toString()} not found in the zip`);
  return out;
}

export interface EntryPatch {
  flags?: number;
  method?: number;
  crc32?: number;
  compressedSize?: number;
  uncompressedSize?: number;
}

const CENTRAL = 0x02014b50;
const LOCAL = 0x04034b50;

/** Rewrites header fields of the entry named `name` in the central directory and local header. */
export function patchEntry(zip: Buffer, name: string, patch: EntryPatch): Buffer {
  const out = Buffer.from(zip);
  let patched = 0;
  for (let i = 0; i + 46 <= out.length; i++) {
    if (out.readUInt32LE(i) !== CENTRAL) continue;
    const nameLen = out.readUInt16LE(i + 28);
    if (out.toString('utf8', i + 46, i + 46 + nameLen) !== name) continue;
    const local = out.readUInt32LE(i + 42);
    if (out.readUInt32LE(local) !== LOCAL) throw new Error('local header not found');
    // Field offsets in the central record and the local header respectively.
    const fields: [keyof EntryPatch, number, number, 2 | 4][] = [
      ['flags', 8, 6, 2],
      ['method', 10, 8, 2],
      ['crc32', 16, 14, 4],
      ['compressedSize', 20, 18, 4],
      ['uncompressedSize', 24, 22, 4],
    ];
    for (const [field, central, loc, width] of fields) {
      const value = patch[field];
      if (value === undefined) continue;
      for (const at of [i + central, local + loc]) {
        if (width === 2) out.writeUInt16LE(value, at);
        else out.writeUInt32LE(value >>> 0, at);
      }
    }
    patched++;
  }
  if (patched !== 1) throw new Error(`entry ${name} found ${patched} times`);
  return out;
}
