import { createHash } from 'node:crypto';
import { mkdtemp, readdir, rm, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { pathToFileURL } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createArtifactStore } from './create.ts';
import { artifactErrorCodeOf } from './errors.ts';
import { ArtifactStoreConfig } from './store.ts';
import type { ArtifactStore } from './store.ts';

const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/** A stream of `count` chunks of `size` bytes each, every byte `fill`. */
function chunks(count: number, size: number, fill = 7): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < count; i++) yield Buffer.alloc(size, fill);
    })(),
  );
}

async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (err) {
    return artifactErrorCodeOf(err) ?? `not an artifact error: ${String(err)}`;
  }
  throw new Error('expected a rejection');
}

let root: string;
let store: ArtifactStore;

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), 'artifacts-'));
  store = createArtifactStore({ kind: 'fs', root });
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('fs artifact store', () => {
  it('round-trips bytes with their sha256, size and a file:// uri', async () => {
    const data = new TextEncoder().encode('hello artifacts');
    const put = await store.put('a/b/hello.txt', data, { contentType: 'text/plain' });
    expect(put).toEqual({
      uri: pathToFileURL(join(root, 'a', 'b', 'hello.txt')).href,
      size: data.byteLength,
      sha256: sha256(data),
    });
    expect(await buffer(await store.get('a/b/hello.txt'))).toEqual(Buffer.from(data));
    expect(store.kind).toBe('fs');
    expect(await store.signedUrl('a/b/hello.txt', 60)).toBeUndefined();
    const st = await store.stat('a/b/hello.txt');
    expect(st).toMatchObject({ key: 'a/b/hello.txt', uri: put.uri, size: data.byteLength });
    expect(st?.updatedAt).toBeInstanceOf(Date);
  });

  it('streams input it never holds whole', async () => {
    const put = await store.put('big/blob.bin', chunks(64, 64 * 1024));
    const expected = Buffer.alloc(64 * 64 * 1024, 7);
    expect(put.size).toBe(expected.length);
    expect(put.sha256).toBe(sha256(expected));
    expect((await buffer(await store.get('big/blob.bin'))).equals(expected)).toBe(true);
  });

  it('stores an empty object', async () => {
    const put = await store.put('empty', new Uint8Array());
    expect(put.size).toBe(0);
    expect(await buffer(await store.get('empty'))).toHaveLength(0);
  });

  it('enforces maxBytes on a stream: too_large, partial removed, old object kept', async () => {
    await store.put('x/out.bin', Buffer.from('old'));
    const source = chunks(100, 1024);
    expect(await codeOf(store.put('x/out.bin', source, { maxBytes: 10_000 }))).toBe('too_large');
    expect(source.destroyed).toBe(true);
    expect((await buffer(await store.get('x/out.bin'))).toString()).toBe('old');
    expect(await readdir(join(root, 'x'))).toEqual(['out.bin']);

    expect(await codeOf(store.put('x/new.bin', chunks(3, 1024), { maxBytes: 3071 }))).toBe(
      'too_large',
    );
    expect(await store.stat('x/new.bin')).toBeUndefined();
    expect(await readdir(join(root, 'x'))).toEqual(['out.bin']);
    // Exactly at the limit is allowed.
    expect((await store.put('x/new.bin', chunks(3, 1024), { maxBytes: 3072 })).size).toBe(3072);
  });

  it('refuses an oversized buffer before touching the disk', async () => {
    const err: unknown = await store
      .put('y/z.bin', new Uint8Array(11), { maxBytes: 10 })
      .catch((e: unknown) => e);
    expect(artifactErrorCodeOf(err)).toBe('too_large');
    expect(err).toMatchObject({ details: { key: 'y/z.bin', maxBytes: 10 } });
    expect(await readdir(root)).toEqual([]);
  });

  it('leaves nothing behind when the upload is aborted or the source fails', async () => {
    const controller = new AbortController();
    controller.abort();
    const aborted = store.put('ab/one', chunks(4, 1024), { signal: controller.signal });
    await expect(aborted).rejects.toThrow(/abort/i);

    const failing = Readable.from(
      (async function* () {
        yield Buffer.alloc(1024);
        await Promise.resolve();
        throw new Error('client went away');
      })(),
    );
    await expect(store.put('ab/two', failing)).rejects.toThrow('client went away');
    expect(await readdir(join(root, 'ab'))).toEqual([]);
  });

  it('reports missing objects: get not_found, stat undefined, delete false', async () => {
    expect(await codeOf(store.get('no/such/key'))).toBe('not_found');
    expect(await store.stat('no/such/key')).toBeUndefined();
    expect(await store.delete('no/such/key')).toBe(false);
    // A folder is not an object either.
    await store.put('dir/inner', Buffer.from('x'));
    expect(await codeOf(store.get('dir'))).toBe('not_found');
    expect(await store.stat('dir')).toBeUndefined();
    expect(await store.delete('dir')).toBe(false);
  });

  it('never follows a symlink planted under the root', async () => {
    await writeFile(join(root, 'outside'), 'secret');
    await symlink(join(root, 'outside'), join(root, 'link'));
    expect(await codeOf(store.get('link'))).toBe('not_found');
    expect(await store.stat('link')).toBeUndefined();
    expect((await collect(store.list(''))).map((o) => o.key)).toEqual(['outside']);
  });

  it.each([
    ['absolute', '/etc/passwd'],
    ['parent', 'a/../../b'],
    ['empty segment', 'a//b'],
    ['backslash', 'a\\b'],
    ['NUL', 'a\0b'],
    ['empty', ''],
  ])('refuses a key that is %s in every operation', async (_case, key) => {
    expect(await codeOf(store.put(key, Buffer.from('x')))).toBe('invalid_key');
    expect(await codeOf(store.get(key))).toBe('invalid_key');
    expect(await codeOf(store.stat(key))).toBe('invalid_key');
    expect(await codeOf(store.delete(key))).toBe('invalid_key');
    expect(await codeOf(store.signedUrl(key, 60))).toBe('invalid_key');
    if (key !== '') expect(await codeOf(collect(store.list(key)))).toBe('invalid_key');
    expect(await readdir(root)).toEqual([]);
  });

  it('lists by string prefix, in key order, without temp files', async () => {
    for (const key of ['s/p1/b', 's/p1/a/x', 's/p10/c', 's/p2/d', 'top']) {
      await store.put(key, Buffer.from(key));
    }
    await writeFile(join(root, 's', 'p1', '.0000.partial'), 'in flight');
    const keys = async (prefix: string) => (await collect(store.list(prefix))).map((o) => o.key);
    expect(await keys('')).toEqual(['s/p1/a/x', 's/p1/b', 's/p10/c', 's/p2/d', 'top']);
    expect(await keys('s/p1/')).toEqual(['s/p1/a/x', 's/p1/b']);
    expect(await keys('s/p1')).toEqual(['s/p1/a/x', 's/p1/b', 's/p10/c']);
    expect(await keys('s/p1/a')).toEqual(['s/p1/a/x']);
    expect(await keys('nothing/')).toEqual([]);
    const [first] = await collect(store.list('s/p2/'));
    expect(first).toMatchObject({ key: 's/p2/d', size: 6, contentType: undefined });
  });

  it('deletes', async () => {
    await store.put('d/one', Buffer.from('1'));
    expect(await store.delete('d/one')).toBe(true);
    expect(await store.stat('d/one')).toBeUndefined();
    expect(await store.delete('d/one')).toBe(false);
  });

  it('ends concurrent puts of one key with one complete object', async () => {
    const writers = Array.from({ length: 8 }, (_, i) =>
      store.put('race/obj.bin', chunks(32, 16 * 1024, i)),
    );
    const results = await Promise.all(writers);
    const stored = await buffer(await store.get('race/obj.bin'));
    expect(stored.length).toBe(32 * 16 * 1024);
    const fill = stored[0];
    expect(stored.every((b) => b === fill)).toBe(true);
    expect(results.map((r) => r.sha256)).toContain(sha256(stored));
    expect(await readdir(join(root, 'race'))).toEqual(['obj.bin']);
  });
});

describe('artifact store config', () => {
  it('parses the fs adapter and rejects unknown kinds and keys', () => {
    expect(ArtifactStoreConfig.parse({ kind: 'fs', root: '/data' })).toEqual({
      kind: 'fs',
      root: '/data',
    });
    expect(ArtifactStoreConfig.safeParse({ kind: 'gcs', bucket: 'b' }).success).toBe(false);
    expect(ArtifactStoreConfig.safeParse({ kind: 'fs', root: '/d', extra: 1 }).success).toBe(false);
  });
});
