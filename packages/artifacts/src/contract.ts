// The behaviour every artifact store adapter owes its callers, as one test suite that each
// adapter's test file runs against a real backend (a folder; the real GCS SDK against the fake
// server). Adapter-specific checks (symlinks, request shapes, signed URLs) stay in those files.
import { createHash } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { artifactErrorCodeOf } from './errors.ts';
import type { ArtifactStore } from './store.ts';

export interface ContractHarness {
  store: ArtifactStore;
  /** The uri the store reports for `key`. */
  uriOf(key: string): string;
  /** What `stat` and `list` report as the content type of an object put with `given`. */
  contentTypeOf(given: string | undefined): string | undefined;
  /**
   * Every name the backend holds for this store, relative to it and sorted: objects, temp files,
   * anything planted. Folders do not count.
   */
  rawNames(): Promise<string[]>;
  /** Stores bytes under `name`, which is not a valid key, behind the store's back. */
  plantForeign(name: string, data: string): Promise<void>;
  close(): Promise<void>;
}

export const sha256 = (data: Uint8Array) => createHash('sha256').update(data).digest('hex');

/** A stream of `count` chunks of `size` bytes each, every byte `fill`. */
export function chunks(count: number, size: number, fill = 7): Readable {
  return Readable.from(
    (function* () {
      for (let i = 0; i < count; i++) yield Buffer.alloc(size, fill);
    })(),
  );
}

export async function collect<T>(items: AsyncIterable<T>): Promise<T[]> {
  const out: T[] = [];
  for await (const item of items) out.push(item);
  return out;
}

/** The artifact error code a promise rejects with; fails the test when it resolves. */
export async function codeOf(promise: Promise<unknown>): Promise<string | undefined> {
  try {
    await promise;
  } catch (err) {
    return artifactErrorCodeOf(err) ?? `not an artifact error: ${String(err)}`;
  }
  throw new Error('expected a rejection');
}

export function artifactStoreContract(
  kind: ArtifactStore['kind'],
  setup: () => Promise<ContractHarness>,
): void {
  describe(`${kind} artifact store: the ArtifactStore contract`, () => {
    let h: ContractHarness;
    let store: ArtifactStore;
    const under = async (prefix: string) =>
      (await h.rawNames()).filter((name) => name.startsWith(prefix));

    beforeEach(async () => {
      h = await setup();
      store = h.store;
    });
    afterEach(async () => {
      await h.close();
    });

    it('round-trips bytes with their sha256, size and uri', async () => {
      const data = new TextEncoder().encode('hello artifacts');
      const put = await store.put('a/b/hello.txt', data, { contentType: 'text/plain' });
      expect(put).toEqual({
        uri: h.uriOf('a/b/hello.txt'),
        size: data.byteLength,
        sha256: sha256(data),
      });
      expect(await buffer(await store.get('a/b/hello.txt'))).toEqual(Buffer.from(data));
      expect(store.kind).toBe(kind);
      const st = await store.stat('a/b/hello.txt');
      expect(st).toEqual({
        key: 'a/b/hello.txt',
        uri: put.uri,
        size: data.byteLength,
        updatedAt: expect.any(Date) as Date,
        contentType: h.contentTypeOf('text/plain'),
      });
    });

    it('streams input it never holds whole', async () => {
      const put = await store.put('big/blob.bin', chunks(64, 64 * 1024));
      const expected = Buffer.alloc(64 * 64 * 1024, 7);
      expect(put.size).toBe(expected.length);
      expect(put.sha256).toBe(sha256(expected));
      expect((await buffer(await store.get('big/blob.bin'))).equals(expected)).toBe(true);
    });

    it('stores an empty object, from a buffer or a stream', async () => {
      const put = await store.put('empty', new Uint8Array());
      expect(put).toMatchObject({ size: 0, sha256: sha256(new Uint8Array()) });
      expect(await buffer(await store.get('empty'))).toHaveLength(0);
      expect((await store.put('empty2', Readable.from([]))).size).toBe(0);
      expect((await store.stat('empty2'))?.size).toBe(0);
    });

    it('enforces maxBytes on a stream: too_large, nothing stored, old object kept', async () => {
      await store.put('x/out.bin', Buffer.from('old'));
      const source = chunks(100, 1024);
      expect(await codeOf(store.put('x/out.bin', source, { maxBytes: 10_000 }))).toBe('too_large');
      expect(source.destroyed).toBe(true);
      expect((await buffer(await store.get('x/out.bin'))).toString()).toBe('old');
      expect(await under('x/')).toEqual(['x/out.bin']);

      expect(await codeOf(store.put('x/new.bin', chunks(3, 1024), { maxBytes: 3071 }))).toBe(
        'too_large',
      );
      expect(await store.stat('x/new.bin')).toBeUndefined();
      expect(await under('x/')).toEqual(['x/out.bin']);
      // Exactly at the limit is allowed.
      expect((await store.put('x/new.bin', chunks(3, 1024), { maxBytes: 3072 })).size).toBe(3072);
    });

    it('refuses an oversized buffer before writing anything', async () => {
      const err: unknown = await store
        .put('y/z.bin', new Uint8Array(11), { maxBytes: 10 })
        .catch((e: unknown) => e);
      expect(artifactErrorCodeOf(err)).toBe('too_large');
      expect(err).toMatchObject({ details: { key: 'y/z.bin', maxBytes: 10 } });
      expect(await h.rawNames()).toEqual([]);
    });

    it('refuses a maxBytes that is not a non-negative integer', async () => {
      await expect(store.put('m', Buffer.from('x'), { maxBytes: -1 })).rejects.toThrow(RangeError);
      await expect(store.put('m', Buffer.from('x'), { maxBytes: 1.5 })).rejects.toThrow(RangeError);
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
      expect(await h.rawNames()).toEqual([]);
      expect(await store.stat('ab/one')).toBeUndefined();
      expect(await store.stat('ab/two')).toBeUndefined();
    });

    it('reports missing objects: get not_found, stat undefined, delete false', async () => {
      expect(await codeOf(store.get('no/such/key'))).toBe('not_found');
      expect(await store.stat('no/such/key')).toBeUndefined();
      expect(await store.delete('no/such/key')).toBe(false);
      // A "folder" is not an object either.
      await store.put('dir/inner', Buffer.from('x'));
      expect(await codeOf(store.get('dir'))).toBe('not_found');
      expect(await store.stat('dir')).toBeUndefined();
      expect(await store.delete('dir')).toBe(false);
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
      expect(await h.rawNames()).toEqual([]);
    });

    it('lists by string prefix, in key order, skipping names that are not keys', async () => {
      for (const key of ['s/p1/b', 's/p1/a/x', 's/p10/c', 's/p2/d', 'top']) {
        await store.put(key, Buffer.from(key));
      }
      await h.plantForeign('s/p1/.0000.partial', 'in flight');
      const keys = async (prefix: string) => (await collect(store.list(prefix))).map((o) => o.key);
      expect(await keys('')).toEqual(['s/p1/a/x', 's/p1/b', 's/p10/c', 's/p2/d', 'top']);
      expect(await keys('s/p1/')).toEqual(['s/p1/a/x', 's/p1/b']);
      expect(await keys('s/p1')).toEqual(['s/p1/a/x', 's/p1/b', 's/p10/c']);
      expect(await keys('s/p1/a')).toEqual(['s/p1/a/x']);
      expect(await keys('nothing/')).toEqual([]);
      const [first] = await collect(store.list('s/p2/'));
      expect(first).toEqual({
        key: 's/p2/d',
        uri: h.uriOf('s/p2/d'),
        size: 6,
        updatedAt: expect.any(Date) as Date,
        contentType: h.contentTypeOf(undefined),
      });
    });

    it('deletes', async () => {
      await store.put('d/one', Buffer.from('1'));
      expect(await store.delete('d/one')).toBe(true);
      expect(await store.stat('d/one')).toBeUndefined();
      expect(await store.delete('d/one')).toBe(false);
      expect(await h.rawNames()).toEqual([]);
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
      expect(await under('race/')).toEqual(['race/obj.bin']);
    });
  });
}
