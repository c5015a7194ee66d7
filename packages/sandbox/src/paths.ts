// Workdir-relative paths, opened from the host without following links out of the workdir.
// Sandboxed commands can leave symlinks behind (`ln -s /etc x`), and the host side writes as
// root, so a plain `path.resolve` + `writeFile` could be steered anywhere. Every component is
// opened through `/proc/self/fd/<parent>/<name>` with O_NOFOLLOW, which resolves relative to the
// directory already open (like openat): swapping a directory for a link mid-walk gains nothing.
import { constants } from 'node:fs';
import { mkdir, open, type FileHandle } from 'node:fs/promises';
import { posix } from 'node:path';
import { SandboxError } from './errors.ts';

const DIR_FLAGS = constants.O_RDONLY | constants.O_DIRECTORY | constants.O_NOFOLLOW;
const READ_FLAGS = constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK;
const WRITE_FLAGS =
  constants.O_WRONLY |
  constants.O_CREAT |
  constants.O_TRUNC |
  constants.O_NOFOLLOW |
  constants.O_NONBLOCK;

/** The components of a workdir-relative path; refuses absolute paths and `..` that leave it. */
export function relativeParts(rel: string): string[] {
  if (rel.includes('\0')) throw escape(rel, 'contains a NUL byte');
  if (posix.isAbsolute(rel)) throw escape(rel, 'is absolute; paths are relative to the workdir');
  const normal = posix.normalize(rel === '' ? '.' : rel);
  if (normal === '..' || normal.startsWith('../')) throw escape(rel, 'leaves the workdir');
  return normal.split('/').filter((part) => part !== '' && part !== '.');
}

/** Checks that `rel` names a directory inside the workdir, reached without links. */
export async function checkDirInside(workdir: string, rel: string): Promise<string> {
  const parts = relativeParts(rel);
  const dir = await openDir(workdir, parts, false, rel);
  await dir.close();
  return parts.length === 0 ? workdir : posix.join(workdir, ...parts);
}

/** Who owns what the host creates in a workdir (the sandbox user, when the service is root). */
export interface Owner {
  readonly uid: number;
  readonly gid: number;
}

/** Creates a directory inside the workdir (and its parents), refusing links on the way. */
export async function ensureDirInside(workdir: string, rel: string, owner?: Owner): Promise<void> {
  const dir = await openDir(workdir, relativeParts(rel), true, rel, owner);
  await dir.close();
}

/**
 * Reads a file inside the workdir. The size is checked on the opened descriptor (fstat; no link
 * followed on the way) before a byte is read, and the read stops past `maxBytes` should the
 * file grow meanwhile: a huge output costs one open and one fstat.
 */
export async function readFileInside(
  workdir: string,
  rel: string,
  maxBytes = Number.MAX_SAFE_INTEGER,
): Promise<Buffer> {
  const parts = relativeParts(rel);
  const name = parts.pop();
  if (name === undefined) throw escape(rel, 'names the workdir itself, not a file');
  const dir = await openDir(workdir, parts, false, rel);
  let file: FileHandle;
  try {
    // O_NONBLOCK: a FIFO left in the workdir must not hang the host.
    file = await open(`/proc/self/fd/${dir.fd}/${name}`, READ_FLAGS);
  } catch (err) {
    throw openError(err, rel);
  } finally {
    await dir.close();
  }
  try {
    const stat = await file.stat();
    if (!stat.isFile()) {
      throw new SandboxError('not_found', `${JSON.stringify(rel)} is not a regular file`);
    }
    if (stat.size > maxBytes) throw tooLarge(rel, stat.size, maxBytes);
    return await readAtMost(file, rel, maxBytes, stat.size);
  } finally {
    await file.close();
  }
}

export async function writeFileInside(
  workdir: string,
  rel: string,
  data: string | Uint8Array,
  owner?: Owner,
): Promise<void> {
  const parts = relativeParts(rel);
  const name = parts.pop();
  if (name === undefined) throw escape(rel, 'names the workdir itself, not a file');
  const dir = await openDir(workdir, parts, true, rel, owner);
  let file: FileHandle;
  try {
    file = await open(`/proc/self/fd/${dir.fd}/${name}`, WRITE_FLAGS, 0o644);
  } catch (err) {
    throw openError(err, rel);
  } finally {
    await dir.close();
  }
  try {
    const stat = await file.stat();
    if (!stat.isFile()) throw escape(rel, 'is not a regular file');
    // On the open file: a command cannot swap the name for a link in between.
    if (owner !== undefined) await file.chown(owner.uid, owner.gid);
    await file.writeFile(data);
  } finally {
    await file.close();
  }
}

async function openDir(
  workdir: string,
  parts: readonly string[],
  create: boolean,
  rel: string,
  owner?: Owner,
): Promise<FileHandle> {
  let dir = await open(workdir, DIR_FLAGS);
  try {
    for (const part of parts) {
      const next = `/proc/self/fd/${dir.fd}/${part}`;
      const made = create ? await mkdir(next).then(() => true, ignoreExists) : false;
      let child: FileHandle;
      try {
        child = await open(next, DIR_FLAGS);
      } catch (err) {
        throw openError(err, rel);
      }
      if (made && owner !== undefined) {
        await child.chown(owner.uid, owner.gid).catch(async (err: unknown) => {
          await child.close();
          throw err;
        });
      }
      await dir.close();
      dir = child;
    }
    return dir;
  } catch (err) {
    await dir.close();
    throw err;
  }
}

function ignoreExists(err: unknown): false {
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
  return false;
}

function openError(err: unknown, rel: string): Error {
  const code = (err as NodeJS.ErrnoException).code;
  // ELOOP: a component is a symlink; ENOTDIR: a file where a directory should be.
  if (code === 'ELOOP' || code === 'ENOTDIR') {
    return escape(rel, 'goes through a symbolic link or a non-directory');
  }
  if (code === 'EISDIR' || code === 'ENXIO') {
    return new SandboxError('not_found', `${JSON.stringify(rel)} is not a regular file`, {
      cause: err,
    });
  }
  if (code === 'ENOENT') {
    return new SandboxError('not_found', `${JSON.stringify(rel)} does not exist in the workdir`, {
      cause: err,
    });
  }
  return err instanceof Error ? err : new Error(String(err));
}

/** Reads the whole file, refusing it once more than `maxBytes` arrived. */
async function readAtMost(
  file: FileHandle,
  rel: string,
  maxBytes: number,
  sizeHint: number,
): Promise<Buffer> {
  const chunks: Buffer[] = [];
  let total = 0;
  const chunkBytes = Math.max(64 * 1024, Math.min(sizeHint + 1, 16 * 1024 * 1024));
  for (;;) {
    const buffer = Buffer.allocUnsafe(chunkBytes);
    const { bytesRead } = await file.read(buffer, 0, buffer.length, null);
    if (bytesRead === 0) return Buffer.concat(chunks, total);
    total += bytesRead;
    if (total > maxBytes) throw tooLarge(rel, total, maxBytes);
    chunks.push(buffer.subarray(0, bytesRead));
  }
}

function tooLarge(rel: string, size: number, limit: number): SandboxError {
  return new SandboxError(
    'too_large',
    `${JSON.stringify(rel)} is ${size} bytes, over the limit of ${limit}`,
    { details: { size_bytes: size, limit_bytes: limit } },
  );
}

function escape(rel: string, why: string): SandboxError {
  return new SandboxError('path_escape', `path ${JSON.stringify(rel)} ${why}`);
}
