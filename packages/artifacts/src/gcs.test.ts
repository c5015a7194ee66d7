// The gcs adapter with the real @google-cloud/storage SDK against the fake GCS server.
import { createHash, generateKeyPairSync } from 'node:crypto';
import { Readable } from 'node:stream';
import { buffer } from 'node:stream/consumers';
import { Storage } from '@google-cloud/storage';
import { startFakeGcs } from '@toolmesh/testing';
import type { FakeGcs } from '@toolmesh/testing';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { artifactStoreContract, chunks, codeOf, collect, sha256 } from './contract.ts';
import { createArtifactStore } from './create.ts';
import { createGcsArtifactStore } from './gcs.ts';
import type { GcsArtifactStoreOptions } from './gcs.ts';
import { ArtifactStoreConfig } from './store.ts';

const KiB = 1024;
const MiB = 1024 * KiB;
const PREFIX = 'tenant/one';

let fake: FakeGcs;
let buckets = 0;
beforeAll(async () => {
  fake = await startFakeGcs();
});
afterAll(async () => {
  await fake.stop();
});

/** A store on a bucket of its own, with chunks and pages small enough to see several. */
function gcsStore(options: Partial<GcsArtifactStoreOptions> = {}) {
  const bucket = `bucket-${++buckets}`;
  fake.createBucket(bucket);
  const store = createGcsArtifactStore({
    bucket,
    prefix: PREFIX,
    apiEndpoint: fake.url,
    chunkSizeBytes: 256 * KiB,
    listPageSize: 2,
    ...options,
  });
  return { bucket, store };
}

/** The requests for `bucket` made while `fn` ran. */
async function requestsDuring(bucket: string, fn: () => Promise<unknown>) {
  const mark = fake.requests().length;
  await fn();
  return fake
    .requests()
    .slice(mark)
    .filter((r) => r.path.includes(`/b/${bucket}/`) || r.path.startsWith(`/${bucket}/`));
}

artifactStoreContract('gcs', () => {
  const { bucket, store } = gcsStore();
  const raw = new Storage({ apiEndpoint: fake.url }).bucket(bucket);
  return Promise.resolve({
    store,
    uriOf: (key) => `gcs://${bucket}/${PREFIX}/${key}`,
    // GCS keeps a content type for every object: the SDK guesses one from the name, and the
    // keys of the contract have no extension it knows.
    contentTypeOf: (given) => given ?? 'application/octet-stream',
    rawNames: () =>
      Promise.resolve(
        fake
          .objects(bucket)
          .map((o) => (o.name.startsWith(`${PREFIX}/`) ? o.name.slice(PREFIX.length + 1) : o.name)),
      ),
    plantForeign: (name, data) => raw.file(`${PREFIX}/${name}`).save(data, { resumable: false }),
    close: () => Promise.resolve(),
  });
});

describe('gcs artifact store', () => {
  it('uploads a small buffer in one multipart request', async () => {
    const { bucket, store } = gcsStore();
    const data = Buffer.from('{"small":true}');
    const requests = await requestsDuring(bucket, () =>
      store.put('m/small.json', data, { contentType: 'application/json' }),
    );
    expect(requests.map((r) => [r.method, r.query.uploadType, r.status])).toEqual([
      ['POST', 'multipart', 200],
    ]);
    const [object] = fake.objects(bucket);
    expect(object).toMatchObject({
      name: `${PREFIX}/m/small.json`,
      contentType: 'application/json',
    });
    expect(object?.data.equals(data)).toBe(true);
  });

  it('streams a large upload in resumable chunks, each but the last answered 308', async () => {
    const { bucket, store } = gcsStore({ chunkSizeBytes: MiB });
    // 3.5 MiB in odd-sized pieces, so chunk edges fall inside them.
    const pieces = Array.from({ length: 36 }, (_, i) => Buffer.alloc(100 * KiB + 256, i));
    const expected = Buffer.concat(pieces);
    let result;
    const requests = await requestsDuring(bucket, async () => {
      result = await store.put('big/upload.bin', Readable.from(pieces));
    });
    expect(result).toEqual({
      uri: `gcs://${bucket}/${PREFIX}/big/upload.bin`,
      size: expected.length,
      sha256: sha256(expected),
    });
    expect(requests.map((r) => [r.method, r.query.uploadType, r.status])).toEqual([
      ['POST', 'resumable', 200],
      ['PUT', 'resumable', 308],
      ['PUT', 'resumable', 308],
      ['PUT', 'resumable', 308],
      ['PUT', 'resumable', 200],
    ]);
    expect(requests.at(-1)?.contentRange).toBe(
      `bytes ${3 * MiB}-${expected.length - 1}/${expected.length}`,
    );
    const [object] = fake.objects(bucket);
    expect(object?.md5Hash).toBe(createHash('md5').update(expected).digest('base64'));
    expect((await buffer(await store.get('big/upload.bin'))).equals(expected)).toBe(true);
  });

  it('fails a download whose bytes do not match the crc32c GCS reports', async () => {
    const { bucket, store } = gcsStore();
    await store.put('v/small.bin', Buffer.from('abc'));
    await store.put('v/large.bin', chunks(8, 128 * KiB));
    for (const key of ['v/small.bin', 'v/large.bin']) {
      fake.corrupt(bucket, `${PREFIX}/${key}`);
      const stream = await store.get(key);
      // Let the whole body arrive before anyone reads: the failure must wait for the reader.
      await new Promise((resolve) => setTimeout(resolve, 50));
      await expect(buffer(stream)).rejects.toMatchObject({ code: 'CONTENT_DOWNLOAD_MISMATCH' });
    }
  });

  it('stops a resumable upload past maxBytes without finishing it', async () => {
    const { bucket, store } = gcsStore();
    await store.put('x/out.bin', Buffer.from('old'));
    // Past the limit only once a chunk has gone up, so the upload is truly under way.
    const mark = fake.requests().length;
    const chunkWentUp = () =>
      fake
        .requests()
        .slice(mark)
        .some((r) => r.status === 308 && r.path.includes(`/b/${bucket}/`));
    const source = Readable.from(
      (async function* () {
        for (let i = 0; i < 16; i++) {
          while (i === 9 && !chunkWentUp()) {
            await new Promise((resolve) => setTimeout(resolve, 5));
          }
          yield Buffer.alloc(64 * KiB, i);
        }
      })(),
    );
    let code;
    const requests = await requestsDuring(bucket, async () => {
      code = await codeOf(store.put('x/out.bin', source, { maxBytes: 600 * KiB }));
    });
    expect(code).toBe('too_large');
    // Whole chunks went up before the limit was hit; none of them named a total size.
    const puts = requests.filter((r) => r.method === 'PUT');
    expect(puts.length).toBeGreaterThan(0);
    expect(puts.every((r) => r.contentRange?.endsWith('/*') === true && r.status !== 200)).toBe(
      true,
    );
    expect((await buffer(await store.get('x/out.bin'))).toString()).toBe('old');
    expect(fake.objects(bucket).map((o) => o.name)).toEqual([`${PREFIX}/x/out.bin`]);
  });

  it('stops a resumable upload aborted midway without finishing it', async () => {
    const { bucket, store } = gcsStore();
    const controller = new AbortController();
    const source = Readable.from(
      (async function* () {
        for (let i = 0; i < 16; i++) {
          if (i === 10) controller.abort();
          yield Buffer.alloc(64 * KiB, i);
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })(),
    );
    await expect(store.put('ab/mid', source, { signal: controller.signal })).rejects.toThrow(
      /abort/i,
    );
    expect(fake.objects(bucket)).toEqual([]);
  });

  it('lists page by page, in key order', async () => {
    const { bucket, store } = gcsStore({ listPageSize: 10 });
    const keys = Array.from({ length: 25 }, (_, i) => `p/k${String(i).padStart(2, '0')}`);
    for (const key of [...keys].reverse()) await store.put(key, Buffer.from(key));
    let listed: string[] = [];
    const requests = await requestsDuring(bucket, async () => {
      listed = (await collect(store.list('p/'))).map((o) => o.key);
    });
    expect(listed).toEqual(keys);
    expect(requests.map((r) => [r.query.maxResults, r.query.pageToken !== undefined])).toEqual([
      ['10', false],
      ['10', true],
      ['10', true],
    ]);
  });

  it('keeps every key under its prefix and sees nothing outside it', async () => {
    const { bucket, store } = gcsStore();
    const other = createGcsArtifactStore({ bucket, prefix: 'tenant/two/', apiEndpoint: fake.url });
    await store.put('k', Buffer.from('one'));
    await other.put('k', Buffer.from('two'));
    await other.put('only-two', Buffer.from('two'));
    expect(fake.objects(bucket).map((o) => o.name)).toEqual([
      'tenant/one/k',
      'tenant/two/k',
      'tenant/two/only-two',
    ]);
    expect((await buffer(await store.get('k'))).toString()).toBe('one');
    expect((await collect(store.list(''))).map((o) => o.key)).toEqual(['k']);
    expect(await codeOf(store.get('only-two'))).toBe('not_found');
    expect((await other.stat('k'))?.uri).toBe(`gcs://${bucket}/tenant/two/k`);
  });

  it('refuses a key that the prefix pushes past 1024 bytes', async () => {
    const { store } = gcsStore();
    const key = Array.from({ length: 5 }, () => 'x'.repeat(203)).join('/'); // 1019 bytes
    expect(await codeOf(store.put(key, Buffer.from('x')))).toBe('invalid_key');
    expect(await codeOf(store.stat(key))).toBe('invalid_key');
    expect((await gcsStore({ prefix: '' }).store.put(key, Buffer.from('x'))).size).toBe(1);
  });

  it('reports a missing bucket as a missing object', async () => {
    const store = createGcsArtifactStore({ bucket: 'no-such-bucket', apiEndpoint: fake.url });
    expect(await codeOf(store.get('k'))).toBe('not_found');
    expect(await store.stat('k')).toBeUndefined();
    expect(await store.delete('k')).toBe(false);
  });

  it('signs v4 read URLs with a private key, and has none without one', async () => {
    const { privateKey } = generateKeyPairSync('rsa', {
      modulusLength: 2048,
      privateKeyEncoding: { type: 'pkcs8', format: 'pem' },
      publicKeyEncoding: { type: 'spki', format: 'pem' },
    });
    const { bucket, store } = gcsStore({
      credentials: {
        client_email: 'artifacts@test.iam.gserviceaccount.com',
        private_key: privateKey,
      },
    });
    await store.put('s/signed.txt', Buffer.from('signed bytes'));
    const url = await store.signedUrl('s/signed.txt', 300);
    expect(url).toBeDefined();
    const parsed = new URL(url ?? '');
    expect(`${parsed.origin}${parsed.pathname}`).toBe(
      `${fake.url}/${bucket}/${PREFIX}/s/signed.txt`,
    );
    expect(parsed.searchParams.get('X-Goog-Algorithm')).toBe('GOOG4-RSA-SHA256');
    expect(parsed.searchParams.get('X-Goog-Expires')).toBe('300');
    expect(parsed.searchParams.get('X-Goog-Signature')).toMatch(/^[0-9a-f]{512}$/);
    const res = await fetch(parsed);
    expect(await res.text()).toBe('signed bytes');
    await expect(store.signedUrl('s/signed.txt', 0)).rejects.toThrow(RangeError);
    await expect(store.signedUrl('s/signed.txt', 8 * 24 * 3600)).rejects.toThrow(RangeError);

    const unsigned = gcsStore().store;
    expect(await unsigned.signedUrl('s/signed.txt', 300)).toBeUndefined();
  });
});

describe('gcs artifact store config', () => {
  beforeEach(() => {
    fake.createBucket('configured');
  });

  it('parses the gcs adapter and builds it', async () => {
    const config = ArtifactStoreConfig.parse({
      kind: 'gcs',
      bucket: 'configured',
      prefix: 'env/prod',
      api_endpoint: fake.url,
    });
    const store = createArtifactStore(config);
    expect(store.kind).toBe('gcs');
    expect((await store.put('k', Buffer.from('v'))).uri).toBe('gcs://configured/env/prod/k');
    expect(fake.objects('configured').map((o) => o.name)).toContain('env/prod/k');
  });

  it.each([
    ['no bucket', { kind: 'gcs' }],
    ['a bucket name GCS refuses', { kind: 'gcs', bucket: 'Has Spaces' }],
    ['a prefix that is not a key', { kind: 'gcs', bucket: 'b-1', prefix: '../up' }],
    ['an endpoint that is not a URL', { kind: 'gcs', bucket: 'b-1', api_endpoint: 'localhost' }],
    ['an unknown key', { kind: 'gcs', bucket: 'b-1', region: 'eu' }],
  ])('rejects %s', (_case, input) => {
    expect(ArtifactStoreConfig.safeParse(input).success).toBe(false);
  });

  it('accepts an empty prefix and one ending in /', () => {
    for (const prefix of ['', 'a/b/']) {
      expect(ArtifactStoreConfig.safeParse({ kind: 'gcs', bucket: 'b-1', prefix }).success).toBe(
        true,
      );
    }
  });
});
