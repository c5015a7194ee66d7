// The folder adapter: one file per object under a root folder, the key's segments as folders.
// A put streams into a temp file beside its target and renames it into place, so readers see
// the old object or the new one whole, never a part, and a failed or oversized put leaves
// nothing behind. Temp names start with `.`, which keys may not, so they can never collide
// with or be listed as an object.
import { randomUUID } from 'node:crypto';
import { constants, createWriteStream } from 'node:fs';
import { lstat, mkdir, open, readdir, rename, rm, unlink } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { pathToFileURL } from 'node:url';
import { ArtifactError } from './errors.ts';
import { assertKey, assertPrefix, keyProblem } from './key.ts';
import { checkMaxBytes, createMeter, tooLarge } from './meter.ts';
import { ArtifactStoreKind } from './store.ts';
import type { ArtifactStat, ArtifactStore, PutResult } from './store.ts';

export interface FsArtifactStoreOptions {
  /** The folder holding every object; created on first write. Relative paths resolve from cwd. */
  root: string;
}

// Errors meaning "nothing at this path": missing, a file where a folder was expected, a
// symlink refused by O_NOFOLLOW, a folder where a file was expected.
const ABSENT = new Set(['ENOENT', 'ENOTDIR', 'ELOOP', 'EISDIR']);
const isAbsent = (err: unknown) =>
  typeof err === 'object' && err !== null && 'code' in err && ABSENT.has(String(err.code));

export function createFsArtifactStore(options: FsArtifactStoreOptions): ArtifactStore {
  const root = resolve(options.root);
  const pathOf = (key: string) => join(root, ...key.split('/'));
  const uriOf = (path: string) => pathToFileURL(path).href;
  const notFound = (key: string) =>
    new ArtifactError('not_found', `no artifact at ${JSON.stringify(key)}`, { details: { key } });

  async function statPath(key: string): Promise<ArtifactStat | undefined> {
    const path = pathOf(key);
    try {
      const st = await lstat(path);
      if (!st.isFile()) return undefined;
      return { key, uri: uriOf(path), size: st.size, updatedAt: st.mtime, contentType: undefined };
    } catch (err) {
      if (isAbsent(err)) return undefined;
      throw err;
    }
  }

  return {
    kind: ArtifactStoreKind.fs,

    async put(key, source, putOptions = {}): Promise<PutResult> {
      assertKey(key);
      const { maxBytes, signal } = putOptions;
      checkMaxBytes(maxBytes);
      const target = pathOf(key);
      const temp = join(dirname(target), `.${randomUUID()}.partial`);
      const meter = createMeter(key, maxBytes);
      try {
        // A buffer that is already too big fails before anything touches the disk.
        if (
          source instanceof Uint8Array &&
          maxBytes !== undefined &&
          source.byteLength > maxBytes
        ) {
          throw tooLarge(key, maxBytes);
        }
        await mkdir(dirname(target), { recursive: true });
        const input = source instanceof Uint8Array ? Readable.from([Buffer.from(source)]) : source;
        // `wx`: the temp name is ours alone; `flush`: the bytes are on disk before the rename
        // makes them visible, so a crash cannot leave a complete-looking truncated object.
        const output = createWriteStream(temp, { flags: 'wx', mode: 0o644, flush: true });
        await pipeline(input, meter.stream, output, signal === undefined ? {} : { signal });
        await rename(temp, target);
      } catch (err) {
        if (source instanceof Readable && !source.destroyed) source.destroy();
        await rm(temp, { force: true });
        throw err;
      }
      return { uri: uriOf(target), ...meter.result() };
    },

    async get(key) {
      assertKey(key);
      let handle;
      try {
        handle = await open(pathOf(key), constants.O_RDONLY | constants.O_NOFOLLOW);
      } catch (err) {
        if (isAbsent(err)) throw notFound(key);
        throw err;
      }
      const st = await handle.stat().catch(async (err: unknown) => {
        await handle.close();
        throw err;
      });
      if (!st.isFile()) {
        await handle.close();
        throw notFound(key);
      }
      return handle.createReadStream();
    },

    async stat(key) {
      return await statPath(assertKey(key));
    },

    async delete(key) {
      assertKey(key);
      try {
        await unlink(pathOf(key));
        return true;
      } catch (err) {
        if (isAbsent(err)) return false;
        throw err;
      }
    },

    async *list(prefix) {
      assertPrefix(prefix);
      // Only the folder the prefix points into can hold matches; walk from there.
      const slash = prefix.lastIndexOf('/');
      const dirKey = slash < 0 ? '' : prefix.slice(0, slash);
      const keys: string[] = [];
      await walk(dirKey === '' ? root : pathOf(dirKey), dirKey, prefix, keys);
      keys.sort();
      for (const key of keys) {
        const st = await statPath(key);
        // Deleted between the walk and now: not listed, as if the walk had come later.
        if (st !== undefined) yield st;
      }
    },

    // Files have no URL a client outside this host could use; callers stream via `get`.
    signedUrl: (key) =>
      Promise.resolve(key).then((k) => {
        assertKey(k);
        return undefined;
      }),
  };
}

/** Collects the keys of regular files under `dir` that start with `prefix`. */
async function walk(dir: string, dirKey: string, prefix: string, out: string[]): Promise<void> {
  let entries;
  try {
    entries = await readdir(dir, { withFileTypes: true });
  } catch (err) {
    if (isAbsent(err)) return;
    throw err;
  }
  for (const entry of entries) {
    // Dot names are temp files (or not ours); symlinks and other non-regular files are not
    // objects and are never followed.
    if (entry.name.startsWith('.')) continue;
    const key = dirKey === '' ? entry.name : `${dirKey}/${entry.name}`;
    if (entry.isDirectory()) {
      if (key.startsWith(prefix) || prefix.startsWith(`${key}/`)) {
        await walk(join(dir, entry.name), key, prefix, out);
      }
    } else if (entry.isFile() && key.startsWith(prefix) && keyProblem(key) === undefined) {
      out.push(key);
    }
  }
}
