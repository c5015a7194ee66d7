// The wire formats of the fake GCS server (fake-gcs.ts): the object checksums GCS reports, the
// `Content-Range` of resumable uploads, `multipart/related` upload bodies, and GCS-shaped JSON
// errors. Kept apart from the routes so each can be read (and tested) on its own.
import { createHash } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum GCS keeps for every object
// and the one @google-cloud/storage validates transfers with. Node has only the IEEE CRC-32 in
// zlib, and packages/testing has no dependency that ships this one.
const CRC32C_TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

/** The CRC-32C of `data` as an unsigned 32-bit integer. */
export function crc32c(data: Uint8Array): number {
  let crc = 0xffffffff;
  for (let i = 0; i < data.length; i++) {
    crc = (CRC32C_TABLE[(crc ^ (data[i] ?? 0)) & 0xff] ?? 0) ^ (crc >>> 8);
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/** The object hashes as GCS writes them: base64 of the big-endian CRC-32C and of the MD5. */
export function objectHashes(data: Uint8Array): { crc32c: string; md5Hash: string } {
  const crc = Buffer.alloc(4);
  crc.writeUInt32BE(crc32c(data));
  return {
    crc32c: crc.toString('base64'),
    md5Hash: createHash('md5').update(data).digest('base64'),
  };
}

/** `X-Goog-Hash: crc32c=...,md5=...` into its parts. */
export function parseGoogHash(header: string | undefined): { crc32c?: string; md5?: string } {
  const out: { crc32c?: string; md5?: string } = {};
  for (const pair of (header ?? '').split(',')) {
    const eq = pair.indexOf('=');
    if (eq < 0) continue;
    const kind = pair.slice(0, eq).trim().toLowerCase();
    const value = pair.slice(eq + 1).trim();
    if (kind === 'crc32c') out.crc32c = value;
    if (kind === 'md5') out.md5 = value;
  }
  return out;
}

// The `Content-Range` of a PUT to a resumable session:
// - `bytes */*` or `bytes */<total>`: a status query (with a total: finalize at that size);
// - `bytes <first>-<last>/<total or *>`: a chunk; `<last>` is `<first> - 1` for an empty one
//   (the SDK sends `bytes 0--1/0` to finish an empty object);
// - `bytes <first>-*/<total or *>`: the rest of the object, streamed in this one request.
// No header at all means the whole object in one request.
export type ContentRange =
  | { kind: 'query'; total: number | '*' }
  | { kind: 'data'; first: number; last: number | '*'; total: number | '*' };

export function parseContentRange(header: string | undefined): ContentRange | undefined {
  if (header === undefined) return { kind: 'data', first: 0, last: '*', total: '*' };
  const query = /^bytes \*\/(\d+|\*)$/.exec(header.trim());
  if (query) return { kind: 'query', total: count(query[1]) };
  const data = /^bytes (\d+)-(-?\d+|\*)\/(\d+|\*)$/.exec(header.trim());
  if (!data) return undefined;
  const first = Number(data[1]);
  const last = count(data[2]);
  if (last !== '*' && last < first - 1) return undefined;
  return { kind: 'data', first, last, total: count(data[3]) };
}

function count(text: string | undefined): number | '*' {
  return text === undefined || text === '*' ? '*' : Number(text);
}

export interface MultipartUpload {
  /** The JSON object resource of the first part. */
  metadata: Record<string, unknown>;
  media: Buffer;
  /** The `Content-Type` of the media part. */
  mediaType: string | undefined;
}

/**
 * A `multipart/related` upload body: a JSON part with the object resource, then the bytes.
 * A body without its closing delimiter is a truncated upload and is refused, so a client that
 * dies mid-request can never leave a cut-off object.
 */
export function parseMultipart(body: Buffer, contentType: string | undefined): MultipartUpload {
  const boundary = /boundary="?([^";]+)"?/i.exec(contentType ?? '')?.[1];
  if (!/^multipart\/related/i.test(contentType ?? '') || boundary === undefined) {
    throw new Error('expected a multipart/related body with a boundary');
  }
  const delimiter = Buffer.from(`--${boundary}`);
  const parts: Buffer[] = [];
  let at = body.indexOf(delimiter);
  let closed = false;
  while (at >= 0) {
    const after = at + delimiter.length;
    if (body.subarray(after, after + 2).toString() === '--') {
      closed = true;
      break;
    }
    const start = after + 2; // the CRLF ending the delimiter line
    const next = body.indexOf(delimiter, start);
    if (next < 0) break;
    parts.push(body.subarray(start, next - 2)); // the CRLF before the next delimiter
    at = next;
  }
  if (!closed) throw new Error('the multipart body ends before its closing delimiter');
  const [meta, media] = parts.map(splitPart);
  if (parts.length !== 2 || meta === undefined || media === undefined) {
    throw new Error(`expected 2 parts (metadata, media), got ${parts.length}`);
  }
  const metadata: unknown = meta.body.length === 0 ? {} : JSON.parse(meta.body.toString('utf8'));
  if (typeof metadata !== 'object' || metadata === null || Array.isArray(metadata)) {
    throw new Error('the metadata part is not a JSON object');
  }
  return {
    metadata: metadata as Record<string, unknown>,
    media: media.body,
    mediaType: media.headers['content-type'],
  };
}

function splitPart(part: Buffer): { headers: Record<string, string>; body: Buffer } {
  const end = part.indexOf('\r\n\r\n');
  const head = end < 0 ? part.toString('latin1') : part.subarray(0, end).toString('latin1');
  const headers: Record<string, string> = {};
  for (const line of head.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0)
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { headers, body: end < 0 ? Buffer.alloc(0) : part.subarray(end + 4) };
}

/** Reasons GCS puts in `error.errors[].reason`. */
export type GcsReason =
  | 'notFound'
  | 'conflict'
  | 'conditionNotMet'
  | 'invalid'
  | 'required'
  | 'badRequest'
  | 'backendError';

export function sendJson(res: ServerResponse, status: number, body: unknown): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'Content-Type': 'application/json; charset=UTF-8',
    'Content-Length': Buffer.byteLength(text),
  });
  res.end(text);
}

/** An error in the JSON API's shape: `{ error: { code, message, errors: [...] } }`. */
export function sendError(
  res: ServerResponse,
  status: number,
  reason: GcsReason,
  message: string,
): void {
  sendJson(res, status, {
    error: { code: status, message, errors: [{ message, domain: 'global', reason }] },
  });
}

/** A client error, answered in the JSON API's error shape by the server's one catch. */
export class HttpError extends Error {
  readonly status: number;
  readonly reason: GcsReason;
  constructor(status: number, reason: GcsReason, message: string) {
    super(message);
    this.name = 'HttpError';
    this.status = status;
    this.reason = reason;
  }
}

/** A request header as one string (repeated ones joined). */
export function header(req: IncomingMessage, name: string): string | undefined {
  const value = req.headers[name];
  return Array.isArray(value) ? value.join(',') : value;
}
