// The fake GCS server alone, over raw HTTP: the resumable-upload dance and the shapes the SDK
// depends on. (packages/artifacts runs the real SDK against it.)
import { createHash } from 'node:crypto';
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeGcs } from './fake-gcs.ts';
import type { FakeGcs } from './fake-gcs.ts';
import { crc32c, objectHashes, parseContentRange, parseMultipart } from './fake-gcs-wire.ts';

const KiB = 1024;
let fake: FakeGcs;
beforeAll(async () => {
  fake = await startFakeGcs();
});
afterAll(async () => {
  await fake.stop();
});

const bytes = (length: number, seed = 1) =>
  Buffer.from(Array.from({ length }, (_, i) => (i * 31 + seed) & 0xff));

async function startSession(bucket: string, name: string): Promise<string> {
  const res = await fetch(
    `${fake.url}/upload/storage/v1/b/${bucket}/o?uploadType=resumable&name=${encodeURIComponent(name)}`,
    {
      method: 'POST',
      headers: { 'Content-Type': 'application/json', 'X-Upload-Content-Type': 'image/png' },
      body: JSON.stringify({ metadata: { origin: 'test' } }),
    },
  );
  expect(res.status).toBe(200);
  const location = res.headers.get('location');
  expect(location).toMatch(/upload_id=/);
  return location ?? '';
}

const put = (session: string, range: string, body?: Buffer, headers: Record<string, string> = {}) =>
  fetch(session, {
    method: 'PUT',
    headers: { 'Content-Range': range, ...headers },
    body: body ?? Buffer.alloc(0),
  });

describe('wire formats', () => {
  it('computes CRC-32C (Castagnoli) and the hashes GCS reports', () => {
    expect(crc32c(Buffer.from('123456789')).toString(16)).toBe('e3069283');
    expect(crc32c(Buffer.alloc(0))).toBe(0);
    expect(objectHashes(Buffer.from('hello'))).toEqual({
      crc32c: 'mnG7TA==',
      md5Hash: createHash('md5').update('hello').digest('base64'),
    });
  });

  it('parses Content-Range forms the SDK sends', () => {
    expect(parseContentRange('bytes 0-262143/*')).toEqual({
      kind: 'data',
      first: 0,
      last: 262143,
      total: '*',
    });
    expect(parseContentRange('bytes 0--1/0')).toEqual({
      kind: 'data',
      first: 0,
      last: -1,
      total: 0,
    });
    expect(parseContentRange('bytes 5-*/*')).toEqual({
      kind: 'data',
      first: 5,
      last: '*',
      total: '*',
    });
    expect(parseContentRange('bytes */*')).toEqual({ kind: 'query', total: '*' });
    expect(parseContentRange('bytes */10')).toEqual({ kind: 'query', total: 10 });
    expect(parseContentRange('bytes 9-3/*')).toBeUndefined();
    expect(parseContentRange('items 0-1/2')).toBeUndefined();
  });

  it('refuses a multipart body cut off before its closing delimiter', () => {
    const type = 'multipart/related; boundary=XYZ';
    const whole = Buffer.from(
      '--XYZ\r\nContent-Type: application/json\r\n\r\n{"name":"n"}\r\n--XYZ\r\nContent-Type: text/plain\r\n\r\nhi\r\n--XYZ--',
    );
    expect(parseMultipart(whole, type)).toEqual({
      metadata: { name: 'n' },
      media: Buffer.from('hi'),
      mediaType: 'text/plain',
    });
    expect(() => parseMultipart(whole.subarray(0, whole.length - 9), type)).toThrow(/closing/);
  });
});

describe('fake GCS server', () => {
  it('runs a resumable upload: 308 with Range per chunk, the object at the last one', async () => {
    const data = bytes(600 * KiB + 123);
    const session = await startSession('dance', 'dir/obj.png');

    let res = await put(session, `bytes 0-${256 * KiB - 1}/*`, data.subarray(0, 256 * KiB));
    expect(res.status).toBe(308);
    expect(res.headers.get('range')).toBe(`bytes=0-${256 * KiB - 1}`);
    expect(res.headers.get('location')).toBeNull();

    // A status query says how far it got, without data.
    res = await put(session, 'bytes */*');
    expect(res.status).toBe(308);
    expect(res.headers.get('range')).toBe(`bytes=0-${256 * KiB - 1}`);

    // A chunk that is not a whole number of 256 KiB units: only the whole units are kept.
    res = await put(
      session,
      `bytes ${256 * KiB}-${300 * KiB - 1}/*`,
      data.subarray(256 * KiB, 300 * KiB),
    );
    expect(res.status).toBe(308);
    expect(res.headers.get('range')).toBe(`bytes=0-${256 * KiB - 1}`);

    // A chunk that overlaps what is kept counts from where the server is; a gap is refused.
    res = await put(
      session,
      `bytes ${512 * KiB}-${512 * KiB}/*`,
      data.subarray(512 * KiB, 512 * KiB + 1),
    );
    expect(res.status).toBe(400);
    res = await put(
      session,
      `bytes ${128 * KiB}-${512 * KiB - 1}/*`,
      data.subarray(128 * KiB, 512 * KiB),
    );
    expect(res.status).toBe(308);
    expect(res.headers.get('range')).toBe(`bytes=0-${512 * KiB - 1}`);
    expect(fake.objects('dance')).toEqual([]);

    const { crc32c: crc, md5Hash } = objectHashes(data);
    res = await put(
      session,
      `bytes ${512 * KiB}-${data.length - 1}/${data.length}`,
      data.subarray(512 * KiB),
      {
        'X-Goog-Hash': `crc32c=${crc},md5=${md5Hash}`,
      },
    );
    expect(res.status).toBe(200);
    const resource = (await res.json()) as Record<string, unknown>;
    expect(resource).toMatchObject({
      kind: 'storage#object',
      bucket: 'dance',
      name: 'dir/obj.png',
      size: String(data.length),
      contentType: 'image/png',
      md5Hash,
      crc32c: crc,
      metadata: { origin: 'test' },
    });
    expect(resource.generation).toMatch(/^\d+$/);
    expect(new Date(resource.updated as string).getTime()).toBeGreaterThan(0);
    expect(fake.objects('dance')[0]?.data.equals(data)).toBe(true);

    // Retrying the last chunk after a lost answer gets the object again, not a second one.
    res = await put(
      session,
      `bytes ${512 * KiB}-${data.length - 1}/${data.length}`,
      data.subarray(512 * KiB),
    );
    expect(res.status).toBe(200);
    expect(((await res.json()) as { generation: string }).generation).toBe(resource.generation);
  });

  it('fails a last chunk whose X-Goog-Hash does not match, storing nothing', async () => {
    const session = await startSession('hashes', 'x');
    const res = await put(session, 'bytes 0-2/3', Buffer.from('abc'), {
      'X-Goog-Hash': 'crc32c=AAAAAA==',
    });
    expect(res.status).toBe(400);
    expect(fake.objects('hashes')).toEqual([]);
  });

  it('finishes an empty object and an object streamed in one request', async () => {
    let session = await startSession('one-shot', 'empty');
    expect((await put(session, 'bytes 0--1/0')).status).toBe(200);
    session = await startSession('one-shot', 'streamed');
    expect((await put(session, 'bytes 0-*/*', bytes(1000))).status).toBe(200);
    expect(fake.objects('one-shot').map((o) => [o.name, o.data.length])).toEqual([
      ['empty', 0],
      ['streamed', 1000],
    ]);
  });

  it('cancels a session with DELETE: 499, then the session is gone', async () => {
    const session = await startSession('cancel', 'x');
    expect((await put(session, `bytes 0-${256 * KiB - 1}/*`, bytes(256 * KiB))).status).toBe(308);
    expect((await fetch(session, { method: 'DELETE' })).status).toBe(499);
    expect((await put(session, 'bytes */*')).status).toBe(404);
    expect(fake.objects('cancel')).toEqual([]);
  });

  it('serves bytes with their hashes, metadata, ranges, and deletes', async () => {
    const session = await startSession('serve', 'a b/c');
    await put(session, 'bytes 0-9/10', Buffer.from('0123456789'));
    const base = `${fake.url}/storage/v1/b/serve/o/${encodeURIComponent('a b/c')}`;
    let res = await fetch(`${base}?alt=media`);
    expect(await res.text()).toBe('0123456789');
    expect(res.headers.get('x-goog-hash')).toBe(
      `crc32c=${objectHashes(Buffer.from('0123456789')).crc32c},md5=${objectHashes(Buffer.from('0123456789')).md5Hash}`,
    );
    expect(res.headers.get('x-goog-stored-content-encoding')).toBe('identity');
    res = await fetch(
      `${fake.url}/download/storage/v1/b/serve/o/${encodeURIComponent('a b/c')}?alt=media`,
      {
        headers: { Range: 'bytes=2-4' },
      },
    );
    expect([res.status, await res.text()]).toEqual([206, '234']);
    expect(await (await fetch(base)).json()).toMatchObject({ name: 'a b/c', size: '10' });

    expect((await fetch(base, { method: 'DELETE' })).status).toBe(204);
    res = await fetch(base, { method: 'DELETE' });
    expect(res.status).toBe(404);
    expect(await res.json()).toEqual({
      error: {
        code: 404,
        message: 'No such object: serve/a b/c',
        errors: [{ message: 'No such object: serve/a b/c', domain: 'global', reason: 'notFound' }],
      },
    });
  });

  it('lists in byte order, page by page, with prefixes and a delimiter', async () => {
    fake.createBucket('listing');
    const names = ['a/1', 'a/2', 'a/sub/3', 'b', 'é', 'z'];
    for (const name of [...names].reverse()) {
      const session = await startSession('listing', name);
      await put(session, 'bytes 0-0/1', Buffer.from('x'));
    }
    const page = async (query: string) =>
      (await (await fetch(`${fake.url}/storage/v1/b/listing/o?${query}`)).json()) as {
        items?: { name: string }[];
        prefixes?: string[];
        nextPageToken?: string;
      };
    const seen: string[] = [];
    let token: string | undefined;
    let pages = 0;
    do {
      const body = await page(`maxResults=4${token === undefined ? '' : `&pageToken=${token}`}`);
      seen.push(...(body.items ?? []).map((i) => i.name));
      token = body.nextPageToken;
      pages++;
    } while (token !== undefined);
    // UTF-8 byte order: 'z' (0x7a) before 'é' (0xc3 0xa9).
    expect(seen).toEqual(['a/1', 'a/2', 'a/sub/3', 'b', 'z', 'é']);
    expect(pages).toBe(2);
    expect(await page('prefix=a/&delimiter=/')).toEqual({
      kind: 'storage#objects',
      items: [expect.objectContaining({ name: 'a/1' }), expect.objectContaining({ name: 'a/2' })],
      prefixes: ['a/sub/'],
    });
    expect(await page('prefix=nothing')).toEqual({ kind: 'storage#objects' });
    expect((await fetch(`${fake.url}/storage/v1/b/no-bucket/o`)).status).toBe(404);
  });

  it('logs requests', async () => {
    const before = fake.requests().length;
    await fetch(`${fake.url}/storage/v1/b/listing/o?prefix=a`);
    expect(fake.requests().slice(before)).toEqual([
      {
        method: 'GET',
        path: '/storage/v1/b/listing/o',
        query: { prefix: 'a' },
        contentRange: undefined,
        status: 200,
      },
    ]);
  });

  it('stores nothing from a multipart upload whose client goes away mid-body (status 0)', async () => {
    const before = fake.requests().length;
    const req = request(`${fake.url}/upload/storage/v1/b/dropped/o?uploadType=multipart&name=x`, {
      method: 'POST',
      headers: { 'Content-Type': 'multipart/related; boundary=B' },
    });
    req.on('error', () => {});
    req.write(
      '--B\r\nContent-Type: application/json\r\n\r\n{}\r\n--B\r\nContent-Type: text/plain\r\n\r\npart',
    );
    await new Promise((resolve) => setTimeout(resolve, 50));
    req.destroy();
    const deadline = Date.now() + 5000;
    while (fake.requests().length === before && Date.now() < deadline) {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
    expect(fake.requests().slice(before)).toMatchObject([{ method: 'POST', status: 0 }]);
    expect(fake.objects('dropped')).toEqual([]);
  });
});
