// Extracting a skill into a folder (the skills service puts skills into sandbox workdirs this
// way). Every check of `inspectSkillZip` applies. Files are written into a fresh staging
// folder beside the destination and the folder is renamed into place at the end, so a refused
// or failed zip leaves nothing behind, and nothing can already sit in the tree we write to: a
// symlink planted in a workdir by an earlier command is never followed. Only the executable
// bit of an entry's mode is kept; symlinks and special files never get this far.
import { createWriteStream } from 'node:fs';
import { chmod, mkdir, mkdtemp, rename, rm } from 'node:fs/promises';
import { dirname, isAbsolute, join, relative, resolve } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { SkillPackageError } from './errors.ts';
import type { SkillZipLimits } from './limits.ts';
import { readSkillZip } from './package.ts';
import type { SkillEntry, SkillPackage } from './package.ts';

export interface ExtractOptions {
  /**
   * Put the root folder's contents straight into `destDir` (`destDir/SKILL.md`) instead of
   * `destDir/<name>/SKILL.md`.
   */
  stripRoot?: boolean;
}

/**
 * Extracts a skill zip into `destDir`, which must not exist or be an empty folder; its parent
 * is created if needed. Returns the package as `inspectSkillZip` describes it.
 */
export async function extractSkillZip(
  data: Uint8Array | string,
  destDir: string,
  limits: Partial<SkillZipLimits> = {},
  options: ExtractOptions = {},
): Promise<SkillPackage> {
  const dest = resolve(destDir);
  await mkdir(dirname(dest), { recursive: true });
  const staging = await mkdtemp(join(dirname(dest), '.skill-extract-'));
  const write = async ({ entry, root, relPath, open }: SkillEntry) => {
    const path =
      options.stripRoot === true ? relPath : relPath === '' ? root : `${root}/${relPath}`;
    if (path === '') return;
    const target = join(staging, ...path.split('/'));
    // The entry rules already refuse anything that could escape; this guards the guard.
    const rel = relative(staging, target);
    if (rel === '' || rel.startsWith('..') || isAbsolute(rel)) {
      throw new SkillPackageError('unsafe_path', `zip entry ${entry.path} escapes the folder`, {
        details: { entry: entry.path },
      });
    }
    if (open === undefined) {
      await mkdir(target, { recursive: true, mode: 0o755 });
      return;
    }
    await mkdir(dirname(target), { recursive: true, mode: 0o755 });
    // `wx`: never write through an existing path (O_EXCL also refuses a symlink there).
    const mode = entry.executable ? 0o755 : 0o644;
    await pipeline(open(), createWriteStream(target, { flags: 'wx', mode }));
  };
  try {
    const pkg = await readSkillZip(data, limits, write);
    await chmod(staging, 0o755);
    await rename(staging, dest).catch((err: unknown) => {
      const code = (err as NodeJS.ErrnoException).code;
      if (code === 'ENOTEMPTY' || code === 'EEXIST' || code === 'ENOTDIR') {
        throw new SkillPackageError(
          'destination_exists',
          `cannot extract into ${dest}: it exists and is not an empty folder`,
          { details: { destDir: dest }, cause: err },
        );
      }
      throw err;
    });
    return pkg;
  } catch (err) {
    await rm(staging, { recursive: true, force: true });
    throw err;
  }
}

/** One file of a skill read into memory: its path below the root folder, and its bytes. */
export interface SkillFileData {
  readonly path: string;
  readonly data: Buffer;
  readonly executable: boolean;
}

/**
 * Reads a skill zip's files into memory, with every check of `inspectSkillZip` (the limits
 * bound what is held: `maxUncompressedBytes`). For a caller that puts the files somewhere of
 * its own (the skills service: into a sandbox's workdir) without a scratch folder on the host.
 * Paths are relative to the root folder, sorted; folders are implied by their files.
 */
export async function readSkillFiles(
  data: Uint8Array | string,
  limits: Partial<SkillZipLimits> = {},
): Promise<{ pkg: SkillPackage; files: SkillFileData[] }> {
  const files: SkillFileData[] = [];
  const pkg = await readSkillZip(data, limits, async ({ relPath, open, entry }) => {
    if (open === undefined || relPath === '') return;
    const chunks: Buffer[] = [];
    for await (const chunk of open()) chunks.push(chunk as Buffer);
    files.push({ path: relPath, data: Buffer.concat(chunks), executable: entry.executable });
  });
  // Folder by folder, names in order (a/b before a.txt), as a walk of the extracted tree lists them.
  files.sort((a, b) => {
    const x = a.path.split('/');
    const y = b.path.split('/');
    for (let i = 0; i < Math.min(x.length, y.length); i++) {
      if (x[i] !== y[i]) return x[i]! < y[i]! ? -1 : 1;
    }
    return x.length - y.length;
  });
  return { pkg, files };
}
