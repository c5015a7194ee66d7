// A fake Google Cloud Storage server for tests: the parts of the JSON API that
// @google-cloud/storage uses for objects, in memory, over real HTTP, so the real SDK talks to it
// (no real GCS is reachable from here, and the Firebase emulator does not start offline).
//
// Routes:
//   POST   /upload/storage/v1/b/:bucket/o?uploadType=multipart|media|resumable
//   PUT    <session uri>             resumable chunks (308 + Range until the last), status queries
//   DELETE <session uri>             cancels a session (499, as GCS answers)
//   GET    /storage/v1/b/:bucket/o   list: prefix, delimiter, maxResults, pageToken
//   GET    /storage/v1/b/:bucket/o/:object   metadata, or the bytes with alt=media
//   GET    /download/storage/v1/b/:bucket/o/:object?alt=media
//   DELETE /storage/v1/b/:bucket/o/:object   204, 404 when missing
//   POST   /storage/v1/b, GET /storage/v1/b/:bucket   buckets
//   GET    /:bucket/:object          path-style XML API, what v4 signed URLs point at
// Downloads carry `X-Goog-Hash` (crc32c and md5) and `X-Goog-Stored-Content-Encoding`, without
// which the SDK silently skips validation. Uploads are checked against the `X-Goog-Hash` the
// SDK sends with the last chunk. An object appears whole at the end of its upload or not at all.
import { randomUUID } from 'node:crypto';
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import {
  objectHashes,
  parseContentRange,
  parseGoogHash,
  parseMultipart,
  sendError,
  sendJson,
} from './fake-gcs-wire.ts';

export interface FakeGcsObject {
  readonly bucket: string;
  readonly name: string;
  readonly data: Buffer;
  readonly contentType: string;
  readonly generation: string;
  /** Base64 MD5 and CRC-32C of the bytes as uploaded (`corrupt` leaves them stale). */
  readonly md5Hash: string;
  readonly crc32c: string;
  readonly timeCreated: string;
  readonly metadata: Readonly<Record<string, string>> | undefined;
}

export interface FakeGcsRequest {
  readonly method: string;
  /** The path, still percent-encoded as sent. */
  readonly path: string;
  readonly query: Readonly<Record<string, string>>;
  readonly contentRange: string | undefined;
  /** 0 when the client went away before an answer. */
  readonly status: number;
}

export interface FakeGcsOptions {
  /** Defaults to a free port on 127.0.0.1. */
  port?: number;
  /** Uploads to an unknown bucket create it (default true); otherwise they get 404. */
  autoCreateBuckets?: boolean;
}

export interface FakeGcs {
  /** `http://127.0.0.1:<port>`: the SDK's `apiEndpoint`. */
  readonly url: string;
  readonly port: number;
  createBucket(name: string): void;
  /** A snapshot of the stored objects, by bucket then name. */
  objects(bucket?: string): FakeGcsObject[];
  /** Every request answered so far, oldest first. */
  requests(): FakeGcsRequest[];
  /** Flips a byte of an object (or adds one) and keeps its old hashes: downloads must fail. */
  corrupt(bucket: string, name: string): void;
  stop(): Promise<void>;
}

interface Session {
  bucket: string;
  name: string;
  contentType: string;
  metadata: Record<string, string> | undefined;
  expected: { crc32c?: string; md5?: string };
  preconditions: URLSearchParams;
  chunks: Buffer[];
  size: number;
  state: 'open' | 'done' | 'cancelled';
  object?: FakeGcsObject;
}

/** A client error, answered in the JSON API's error shape. */
class HttpError extends Error {
  readonly status: number;
  readonly reason: Parameters<typeof sendError>[2];
  constructor(status: number, reason: HttpError['reason'], message: string) {
    super(message);
    this.status = status;
    this.reason = reason;
  }
}

/** Non-final resumable chunks are persisted in multiples of this, as GCS does. */
const CHUNK_QUANTUM = 256 * 1024;
const MAX_PAGE = 1000;

export async function startFakeGcs(options: FakeGcsOptions = {}): Promise<FakeGcs> {
  const buckets = new Map<string, Map<string, FakeGcsObject>>();
  const sessions = new Map<string, Session>();
  const log: FakeGcsRequest[] = [];
  const autoCreate = options.autoCreateBuckets ?? true;
  // GCS generations are microsecond timestamps; they only need to grow.
  let lastGeneration = Date.now() * 1000;
  let url = '';

  const bucketOf = (name: string, create = false) => {
    let bucket = buckets.get(name);
    if (bucket === undefined && create && autoCreate) {
      bucket = new Map();
      buckets.set(name, bucket);
    }
    if (bucket === undefined) {
      throw new HttpError(404, 'notFound', 'The specified bucket does not exist.');
    }
    return bucket;
  };
  const objectOf = (bucket: string, name: string, query: URLSearchParams) => {
    const object = bucketOf(bucket).get(name);
    const generation = query.get('generation');
    if (object === undefined || (generation !== null && generation !== object.generation)) {
      throw new HttpError(404, 'notFound', `No such object: ${bucket}/${name}`);
    }
    return object;
  };

  /** `ifGenerationMatch` (0: must not exist) and `ifGenerationNotMatch`, as GCS checks them. */
  function checkPreconditions(bucket: string, name: string, query: URLSearchParams): void {
    const current = buckets.get(bucket)?.get(name)?.generation ?? '0';
    const match = query.get('ifGenerationMatch');
    const notMatch = query.get('ifGenerationNotMatch');
    if ((match !== null && match !== current) || (notMatch !== null && notMatch === current)) {
      throw new HttpError(
        412,
        'conditionNotMet',
        'At least one of the pre-conditions you specified did not hold.',
      );
    }
  }

  function store(
    session: Omit<Session, 'chunks' | 'size' | 'state' | 'object'>,
    data: Buffer,
  ): FakeGcsObject {
    const hashes = objectHashes(data);
    if (
      (session.expected.crc32c !== undefined && session.expected.crc32c !== hashes.crc32c) ||
      (session.expected.md5 !== undefined && session.expected.md5 !== hashes.md5Hash)
    ) {
      throw new HttpError(400, 'invalid', 'Provided checksums do not match the uploaded data.');
    }
    checkPreconditions(session.bucket, session.name, session.preconditions);
    const object: FakeGcsObject = {
      bucket: session.bucket,
      name: session.name,
      data,
      contentType: session.contentType,
      generation: String(++lastGeneration),
      ...hashes,
      timeCreated: new Date().toISOString(),
      metadata: session.metadata,
    };
    // One Map.set: readers and listers see the old object or the new one, never a part.
    bucketOf(session.bucket, true).set(session.name, object);
    return object;
  }

  const resource = (o: FakeGcsObject) => {
    const path = `b/${o.bucket}/o/${encodeURIComponent(o.name)}`;
    return {
      kind: 'storage#object',
      id: `${o.bucket}/${o.name}/${o.generation}`,
      selfLink: `${url}/storage/v1/${path}`,
      mediaLink: `${url}/download/storage/v1/${path}?generation=${o.generation}&alt=media`,
      name: o.name,
      bucket: o.bucket,
      generation: o.generation,
      metageneration: '1',
      contentType: o.contentType,
      storageClass: 'STANDARD',
      size: String(o.data.length),
      md5Hash: o.md5Hash,
      crc32c: o.crc32c,
      etag: `CP${o.generation}`,
      timeCreated: o.timeCreated,
      updated: o.timeCreated,
      timeStorageClassUpdated: o.timeCreated,
      ...(o.metadata === undefined ? {} : { metadata: o.metadata }),
    };
  };

  function upload(
    req: IncomingMessage,
    res: ServerResponse,
    bucket: string,
    body: Buffer,
    query: URLSearchParams,
  ) {
    const type = query.get('uploadType');
    let metadata: Record<string, unknown> = {};
    let media = body;
    let mediaType = req.headers['content-type'];
    if (type === 'multipart') {
      try {
        ({ metadata, media, mediaType } = parseMultipart(body, req.headers['content-type']));
      } catch (err) {
        throw new HttpError(400, 'invalid', (err as Error).message);
      }
    } else if (type === 'resumable') {
      metadata =
        body.length === 0 ? {} : (JSON.parse(body.toString('utf8')) as Record<string, unknown>);
      mediaType = header(req, 'x-upload-content-type');
    } else if (type !== 'media') {
      throw new HttpError(400, 'invalid', `unsupported uploadType ${String(type)}`);
    }
    const name = query.get('name') ?? (typeof metadata.name === 'string' ? metadata.name : '');
    if (name === '' || Buffer.byteLength(name) > 1024 || /[\r\n]/.test(name)) {
      throw new HttpError(400, 'required', 'Object name is required and must be valid.');
    }
    bucketOf(bucket, true);
    checkPreconditions(bucket, name, query);
    const fromHeader = parseGoogHash(header(req, 'x-goog-hash'));
    const session = {
      bucket,
      name,
      contentType:
        (typeof metadata.contentType === 'string' ? metadata.contentType : undefined) ??
        mediaType ??
        'application/octet-stream',
      metadata: metadata.metadata as Record<string, string> | undefined,
      expected: {
        crc32c: typeof metadata.crc32c === 'string' ? metadata.crc32c : fromHeader.crc32c,
        md5: typeof metadata.md5Hash === 'string' ? metadata.md5Hash : fromHeader.md5,
      },
      preconditions: query,
    };
    if (type !== 'resumable') {
      sendJson(res, 200, resource(store(session, media)));
      return;
    }
    const id = randomUUID();
    sessions.set(id, { ...session, chunks: [], size: 0, state: 'open' });
    const location = `${url}/upload/storage/v1/b/${bucket}/o?uploadType=resumable&name=${encodeURIComponent(name)}&upload_id=${id}`;
    res.writeHead(200, { Location: location, 'Content-Length': 0 });
    res.end();
  }

  /** A PUT to a resumable session: a chunk, the last chunk, or a status query. */
  function resume(req: IncomingMessage, res: ServerResponse, session: Session, body: Buffer) {
    const range = parseContentRange(header(req, 'content-range'));
    if (range === undefined) throw new HttpError(400, 'invalid', 'Invalid Content-Range header.');
    if (session.state === 'done' && session.object) {
      sendJson(res, 200, resource(session.object));
      return;
    }
    let total = range.total;
    if (range.kind === 'data') {
      if (range.last !== '*' && range.last - range.first + 1 !== body.length) {
        throw new HttpError(400, 'invalid', 'Content-Range does not match the body length.');
      }
      if (range.first > session.size) {
        throw new HttpError(
          400,
          'invalid',
          `Chunk starts at ${range.first}, expected ${session.size}.`,
        );
      }
      // A retried chunk may overlap what is already persisted; only the new bytes count.
      const fresh = body.subarray(session.size - range.first);
      session.chunks.push(fresh);
      session.size += fresh.length;
      // The rest of the object streamed in one request: its end is the object's end.
      if (range.last === '*' && total === '*') total = session.size;
    }
    if (total !== '*' && session.size > total) {
      throw new HttpError(400, 'invalid', `Received ${session.size} bytes, more than ${total}.`);
    }
    if (total !== '*' && session.size === total) {
      const data = Buffer.concat(session.chunks);
      const expected = parseGoogHash(header(req, 'x-goog-hash'));
      session.object = store({ ...session, expected: { ...session.expected, ...expected } }, data);
      session.state = 'done';
      session.chunks = [];
      sendJson(res, 200, resource(session.object));
      return;
    }
    // Not the end: GCS persists whole 256 KiB units only and says how far it got.
    const kept = Math.floor(session.size / CHUNK_QUANTUM) * CHUNK_QUANTUM;
    if (kept < session.size) {
      const data = Buffer.concat(session.chunks).subarray(0, kept);
      session.chunks = [data];
      session.size = kept;
    }
    res.writeHead(
      308,
      session.size > 0
        ? { Range: `bytes=0-${session.size - 1}`, 'Content-Length': 0 }
        : { 'Content-Length': 0 },
    );
    res.end();
  }

  function download(req: IncomingMessage, res: ServerResponse, object: FakeGcsObject) {
    const headers: Record<string, string | number> = {
      'Content-Type': object.contentType,
      'X-Goog-Hash': `crc32c=${object.crc32c},md5=${object.md5Hash}`,
      'X-Goog-Generation': object.generation,
      'X-Goog-Metageneration': '1',
      'X-Goog-Stored-Content-Encoding': 'identity',
      'X-Goog-Stored-Content-Length': object.data.length,
      ETag: `"${object.md5Hash}"`,
      'Last-Modified': new Date(object.timeCreated).toUTCString(),
    };
    const range = /^bytes=(\d*)-(\d*)$/.exec(header(req, 'range') ?? '');
    const size = object.data.length;
    if (range && (range[1] !== '' || range[2] !== '')) {
      const first = range[1] === '' ? Math.max(0, size - Number(range[2])) : Number(range[1]);
      const last =
        range[1] === '' || range[2] === '' ? size - 1 : Math.min(Number(range[2]), size - 1);
      if (first >= size || last < first) {
        res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Length': 0 });
        res.end();
        return;
      }
      const part = object.data.subarray(first, last + 1);
      res.writeHead(206, {
        ...headers,
        'Content-Range': `bytes ${first}-${last}/${size}`,
        'Content-Length': part.length,
      });
      res.end(part);
      return;
    }
    res.writeHead(200, { ...headers, 'Content-Length': size });
    res.end(object.data);
  }

  function list(res: ServerResponse, bucket: string, query: URLSearchParams) {
    const prefix = query.get('prefix') ?? '';
    const delimiter = query.get('delimiter') ?? '';
    const pageSize = Math.min(Number(query.get('maxResults') ?? MAX_PAGE) || MAX_PAGE, MAX_PAGE);
    const token = query.get('pageToken');
    const after = token === null ? undefined : Buffer.from(token, 'base64url').toString('utf8');
    // Entries in GCS's order (UTF-8 bytes); with a delimiter, a "folder" is one entry.
    const entries: { key: string; object?: FakeGcsObject }[] = [];
    for (const object of sortedObjects(bucketOf(bucket).values())) {
      if (!object.name.startsWith(prefix)) continue;
      const cut = delimiter === '' ? -1 : object.name.indexOf(delimiter, prefix.length);
      if (cut < 0) entries.push({ key: object.name, object });
      else {
        const folder = object.name.slice(0, cut + delimiter.length);
        if (entries.at(-1)?.key !== folder) entries.push({ key: folder });
      }
    }
    const rest = after === undefined ? entries : entries.filter((e) => byteOrder(e.key, after) > 0);
    const page = rest.slice(0, pageSize);
    const items = page.flatMap((e) => (e.object ? [resource(e.object)] : []));
    const prefixes = page.flatMap((e) => (e.object ? [] : [e.key]));
    const last = page.at(-1);
    sendJson(res, 200, {
      kind: 'storage#objects',
      ...(items.length > 0 ? { items } : {}),
      ...(prefixes.length > 0 ? { prefixes } : {}),
      ...(rest.length > page.length && last
        ? { nextPageToken: Buffer.from(last.key).toString('base64url') }
        : {}),
    });
  }

  async function route(req: IncomingMessage, res: ServerResponse, target: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const path = target.pathname;
    const query = target.searchParams;
    const body = await readBody(req);
    let m: RegExpExecArray | null;

    if ((m = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/.exec(path))) {
      const bucket = decodeURIComponent(m[1] ?? '');
      const id = query.get('upload_id');
      if (id === null && method === 'POST') return upload(req, res, bucket, body, query);
      const session = id === null ? undefined : sessions.get(id);
      if (session === undefined || session.state === 'cancelled') {
        throw new HttpError(404, 'notFound', 'No such upload session.');
      }
      if (method === 'PUT') return resume(req, res, session, body);
      if (method === 'DELETE') {
        session.state = 'cancelled';
        session.chunks = [];
        res.writeHead(499, { 'Content-Length': 0 });
        res.end();
        return;
      }
    } else if ((m = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/.exec(path))) {
      const bucket = decodeURIComponent(m[1] ?? '');
      const name = decodeURIComponent(m[2] ?? '');
      if (method === 'GET') {
        const object = objectOf(bucket, name, query);
        if (query.get('alt') === 'media') return download(req, res, object);
        return sendJson(res, 200, resource(object));
      }
      if (method === 'DELETE') {
        objectOf(bucket, name, query);
        checkPreconditions(bucket, name, query);
        bucketOf(bucket).delete(name);
        res.writeHead(204);
        res.end();
        return;
      }
    } else if ((m = /^\/storage\/v1\/b\/([^/]+)\/o$/.exec(path)) && method === 'GET') {
      return list(res, decodeURIComponent(m[1] ?? ''), query);
    } else if (path === '/storage/v1/b' && method === 'POST') {
      const { name } = JSON.parse(body.toString('utf8') || '{}') as { name?: unknown };
      if (typeof name !== 'string' || name === '')
        throw new HttpError(400, 'required', 'Bucket name is required.');
      if (buckets.has(name))
        throw new HttpError(409, 'conflict', 'The requested bucket name is not available.');
      buckets.set(name, new Map());
      return sendJson(res, 200, { kind: 'storage#bucket', id: name, name });
    } else if ((m = /^\/storage\/v1\/b\/([^/]+)$/.exec(path)) && method === 'GET') {
      const name = decodeURIComponent(m[1] ?? '');
      bucketOf(name);
      return sendJson(res, 200, { kind: 'storage#bucket', id: name, name });
    } else if ((m = /^\/([^/]+)\/(.+)$/.exec(path)) && method === 'GET') {
      // The XML API, path style: what a v4 signed URL for `apiEndpoint` points at. The
      // signature is not checked (the fake has no keys); the expiry is.
      const start = parseGoogDate(query.get('X-Goog-Date'));
      const ttl = Number(query.get('X-Goog-Expires'));
      if (start !== undefined && Date.now() > start + ttl * 1000) {
        res.writeHead(400, { 'Content-Type': 'application/xml' });
        res.end('<Error><Code>ExpiredToken</Code><Message>Request has expired</Message></Error>');
        return;
      }
      const object = buckets
        .get(decodeURIComponent(m[1] ?? ''))
        ?.get(decodeURIComponent(m[2] ?? ''));
      if (object === undefined) {
        res.writeHead(404, { 'Content-Type': 'application/xml' });
        res.end(
          '<Error><Code>NoSuchKey</Code><Message>The specified key does not exist.</Message></Error>',
        );
        return;
      }
      return download(req, res, object);
    }
    throw new HttpError(404, 'notFound', `No route for ${method} ${path}`);
  }

  const server = createServer((req, res) => {
    const target = new URL(req.url ?? '/', url);
    res.on('close', () => {
      log.push({
        method: req.method ?? 'GET',
        path: target.pathname,
        query: Object.fromEntries(target.searchParams),
        contentRange: header(req, 'content-range'),
        status: res.writableFinished ? res.statusCode : 0,
      });
    });
    route(req, res, target).catch((err: unknown) => {
      if (res.headersSent || res.destroyed || !req.complete) {
        res.destroy();
        return;
      }
      if (err instanceof HttpError) sendError(res, err.status, err.reason, err.message);
      else if (err instanceof SyntaxError) sendError(res, 400, 'badRequest', err.message);
      else sendError(res, 500, 'backendError', String(err));
    });
  });

  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const address = server.address();
  if (address === null || typeof address !== 'object')
    throw new Error('the fake GCS server has no port');
  url = `http://127.0.0.1:${address.port}`;

  return {
    url,
    port: address.port,
    createBucket(name) {
      if (!buckets.has(name)) buckets.set(name, new Map());
    },
    objects(bucket) {
      const all = [...buckets.entries()].filter(
        ([name]) => bucket === undefined || name === bucket,
      );
      return all
        .sort(([a], [b]) => byteOrder(a, b))
        .flatMap(([, objects]) => sortedObjects(objects.values()));
    },
    requests: () => [...log],
    corrupt(bucket, name) {
      const object = buckets.get(bucket)?.get(name);
      if (object === undefined) throw new Error(`no object ${bucket}/${name} to corrupt`);
      const data = object.data.length === 0 ? Buffer.from([0]) : Buffer.from(object.data);
      data[0] = (data[0] ?? 0) ^ 0xff;
      buckets.get(bucket)?.set(name, { ...object, data });
    },
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // Aborted uploads may hold requests open forever (the SDK's multipart stream never
        // ends once destroyed); do not wait for them.
        server.closeAllConnections();
      }),
  };
}

function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  // Rejects when the client goes away mid-body: nothing half-received is ever stored.
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

function sortedObjects(objects: Iterable<FakeGcsObject>): FakeGcsObject[] {
  return [...objects].sort((a, b) => byteOrder(a.name, b.name));
}

/** `20240102T030405Z` as epoch milliseconds. */
function parseGoogDate(text: string | null): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  if (!m) return undefined;
  return Date.UTC(
    Number(m[1]),
    Number(m[2]) - 1,
    Number(m[3]),
    Number(m[4]),
    Number(m[5]),
    Number(m[6]),
  );
}
