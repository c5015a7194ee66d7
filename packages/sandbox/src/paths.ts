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

/** Creates a directory inside the workdir (and its parents), refusing links on the way. */
export async function ensureDirInside(workdir: string, rel: string): Promise<void> {
  const dir = await openDir(workdir, relativeParts(rel), true, rel);
  await dir.close();
}

export async function readFileInside(workdir: string, rel: string): Promise<Buffer> {
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
    return await file.readFile();
  } finally {
    await file.close();
  }
}

export async function writeFileInside(
  workdir: string,
  rel: string,
  data: string | Uint8Array,
): Promise<void> {
  const parts = relativeParts(rel);
  const name = parts.pop();
  if (name === undefined) throw escape(rel, 'names the workdir itself, not a file');
  const dir = await openDir(workdir, parts, true, rel);
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
): Promise<FileHandle> {
  let dir = await open(workdir, DIR_FLAGS);
  try {
    for (const part of parts) {
      const next = `/proc/self/fd/${dir.fd}/${part}`;
      if (create) await mkdir(next).catch(ignoreExists);
      let child: FileHandle;
      try {
        child = await open(next, DIR_FLAGS);
      } catch (err) {
        throw openError(err, rel);
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

function ignoreExists(err: unknown): void {
  if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
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

function escape(rel: string, why: string): SandboxError {
  return new SandboxError('path_escape', `path ${JSON.stringify(rel)} ${why}`);
}
