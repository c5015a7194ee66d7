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
// which the SDK silently skips validation. Errors have the JSON API's shape
// (`{ error: { code, message, errors: [{ reason }] } }`), which the SDK turns into `ApiError`s.
import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { createBuckets, objectResource } from './fake-gcs-buckets.ts';
import type { FakeGcsObject } from './fake-gcs-buckets.ts';
import { createUploads } from './fake-gcs-uploads.ts';
import { header, HttpError, sendError, sendJson } from './fake-gcs-wire.ts';

export type { FakeGcsObject } from './fake-gcs-buckets.ts';

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
  /** Every request answered (or dropped) so far, oldest first. */
  requests(): FakeGcsRequest[];
  /** Flips a byte of an object (or adds one) and keeps its old hashes: downloads must fail. */
  corrupt(bucket: string, name: string): void;
  stop(): Promise<void>;
}

const UPLOAD = /^\/upload\/storage\/v1\/b\/([^/]+)\/o$/;
const OBJECT = /^\/(?:download\/)?storage\/v1\/b\/([^/]+)\/o\/(.+)$/;
const OBJECTS = /^\/storage\/v1\/b\/([^/]+)\/o$/;
const BUCKET = /^\/storage\/v1\/b\/([^/]+)$/;
const XML_OBJECT = /^\/([^/]+)\/(.+)$/;

export async function startFakeGcs(options: FakeGcsOptions = {}): Promise<FakeGcs> {
  const buckets = createBuckets(options.autoCreateBuckets ?? true);
  let url = '';
  const uploads = createUploads(buckets, () => url);
  const log: FakeGcsRequest[] = [];

  async function route(req: IncomingMessage, res: ServerResponse, target: URL): Promise<void> {
    const method = req.method ?? 'GET';
    const path = target.pathname;
    const query = target.searchParams;
    const body = await readBody(req);
    const part = (m: RegExpExecArray, i: number) => decodeURIComponent(m[i] ?? '');
    let m: RegExpExecArray | null;

    if ((m = UPLOAD.exec(path))) {
      const id = query.get('upload_id');
      if (id === null && method === 'POST') return uploads.start(req, res, part(m, 1), body, query);
      const session = uploads.session(id);
      if (method === 'PUT') return uploads.resume(req, res, session, body);
      if (method === 'DELETE') return uploads.cancel(res, session);
    } else if ((m = OBJECT.exec(path))) {
      const [bucket, name] = [part(m, 1), part(m, 2)];
      if (method === 'GET') {
        const object = buckets.object(bucket, name, query);
        if (query.get('alt') === 'media') return download(req, res, object);
        return sendJson(res, 200, objectResource(object, url));
      }
      if (method === 'DELETE') {
        buckets.remove(bucket, name, query);
        res.writeHead(204);
        res.end();
        return;
      }
    } else if ((m = OBJECTS.exec(path)) && method === 'GET') {
      const page = buckets.list(part(m, 1), query);
      return sendJson(res, 200, {
        kind: 'storage#objects',
        // GCS leaves out empty lists.
        ...(page.items.length > 0 ? { items: page.items.map((o) => objectResource(o, url)) } : {}),
        ...(page.prefixes.length > 0 ? { prefixes: page.prefixes } : {}),
        ...(page.nextPageToken === undefined ? {} : { nextPageToken: page.nextPageToken }),
      });
    } else if (path === '/storage/v1/b' && method === 'POST') {
      const { name } = JSON.parse(body.toString('utf8') || '{}') as { name?: unknown };
      if (typeof name !== 'string' || name === '') {
        throw new HttpError(400, 'required', 'Bucket name is required.');
      }
      if (!buckets.createBucket(name)) {
        throw new HttpError(409, 'conflict', 'The requested bucket name is not available.');
      }
      return sendJson(res, 200, { kind: 'storage#bucket', id: name, name });
    } else if ((m = BUCKET.exec(path)) && method === 'GET') {
      const name = part(m, 1);
      buckets.bucket(name);
      return sendJson(res, 200, { kind: 'storage#bucket', id: name, name });
    } else if ((m = XML_OBJECT.exec(path)) && method === 'GET') {
      return xmlDownload(req, res, query, part(m, 1), part(m, 2));
    }
    throw new HttpError(404, 'notFound', `No route for ${method} ${path}`);
  }

  // The XML API, path style: what a v4 signed URL for `apiEndpoint` points at. The signature
  // is not checked (the fake holds no public keys); the expiry is.
  function xmlDownload(
    req: IncomingMessage,
    res: ServerResponse,
    query: URLSearchParams,
    bucket: string,
    name: string,
  ) {
    const xmlError = (status: number, code: string, message: string) => {
      res.writeHead(status, { 'Content-Type': 'application/xml' });
      res.end(`<Error><Code>${code}</Code><Message>${message}</Message></Error>`);
    };
    const start = parseGoogDate(query.get('X-Goog-Date'));
    const ttlSec = Number(query.get('X-Goog-Expires'));
    if (start !== undefined && Date.now() > start + ttlSec * 1000) {
      return xmlError(400, 'ExpiredToken', 'The provided token has expired.');
    }
    const object = buckets.objects(bucket).find((o) => o.name === name);
    if (object === undefined)
      return xmlError(404, 'NoSuchKey', 'The specified key does not exist.');
    return download(req, res, object);
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
      // The client went away (mid-body, say): there is no one to answer.
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
  if (address === null || typeof address !== 'object') {
    throw new Error('the fake GCS server has no port');
  }
  url = `http://127.0.0.1:${address.port}`;

  return {
    url,
    port: address.port,
    createBucket: (name) => void buckets.createBucket(name),
    objects: (bucket) => buckets.objects(bucket),
    requests: () => [...log],
    corrupt: (bucket, name) => buckets.corrupt(bucket, name),
    stop: () =>
      new Promise<void>((resolve, reject) => {
        server.close((err) => (err ? reject(err) : resolve()));
        // An upload the SDK destroyed mid-request may never end its body (its multipart
        // stream waits for an 'end' that never comes): do not wait for such connections.
        server.closeAllConnections();
      }),
  };
}

/** The bytes, with the headers the SDK validates them by; honours a single `Range`. */
function download(req: IncomingMessage, res: ServerResponse, object: FakeGcsObject) {
  const size = object.data.length;
  const headers = {
    'Content-Type': object.contentType,
    'X-Goog-Hash': `crc32c=${object.crc32c},md5=${object.md5Hash}`,
    'X-Goog-Generation': object.generation,
    'X-Goog-Metageneration': '1',
    'X-Goog-Stored-Content-Encoding': 'identity',
    'X-Goog-Stored-Content-Length': size,
    ETag: `"${object.md5Hash}"`,
    'Last-Modified': new Date(object.timeCreated).toUTCString(),
  };
  const range = /^bytes=(\d*)-(\d*)$/.exec(header(req, 'range') ?? '');
  if (!range || (range[1] === '' && range[2] === '')) {
    res.writeHead(200, { ...headers, 'Content-Length': size });
    res.end(object.data);
    return;
  }
  const [, from = '', to = ''] = range;
  const first = from === '' ? Math.max(0, size - Number(to)) : Number(from);
  const last = from === '' || to === '' ? size - 1 : Math.min(Number(to), size - 1);
  if (first >= size || last < first) {
    res.writeHead(416, { 'Content-Range': `bytes */${size}`, 'Content-Length': 0 });
    res.end();
    return;
  }
  const bytes = object.data.subarray(first, last + 1);
  res.writeHead(206, {
    ...headers,
    'Content-Range': `bytes ${first}-${last}/${size}`,
    'Content-Length': bytes.length,
  });
  res.end(bytes);
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  // Rejects when the client goes away mid-body: nothing half-received is ever stored.
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks);
}

/** `20240102T030405Z` as epoch milliseconds. */
function parseGoogDate(text: string | null): number | undefined {
  const m = /^(\d{4})(\d{2})(\d{2})T(\d{2})(\d{2})(\d{2})Z$/.exec(text ?? '');
  if (!m) return undefined;
  const [, y, mo, d, h, mi, s] = m.map(Number);
  return Date.UTC(y ?? 0, (mo ?? 1) - 1, d, h, mi, s);
}
