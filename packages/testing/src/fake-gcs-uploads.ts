// Uploads to the fake GCS server: single-request ones (multipart, media) and resumable
// sessions. A session collects chunks; only a request that names the total size and completes
// it turns the bytes into an object. Until then GCS persists whole 256 KiB units only and tells
// the client how far it got (308 + Range), which the SDK resumes from.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Buckets, FakeGcsObject, PendingObject } from './fake-gcs-buckets.ts';
import { objectResource } from './fake-gcs-buckets.ts';
import {
  header,
  HttpError,
  parseContentRange,
  parseGoogHash,
  parseMultipart,
  sendJson,
} from './fake-gcs-wire.ts';

interface Session extends PendingObject {
  chunks: Buffer[];
  size: number;
  state: 'open' | 'done' | 'cancelled';
  object?: FakeGcsObject;
}

const CHUNK_QUANTUM = 256 * 1024;
const MAX_NAME_BYTES = 1024;

export function createUploads(buckets: Buckets, baseUrl: () => string) {
  const sessions = new Map<string, Session>();
  const answer = (res: ServerResponse, object: FakeGcsObject) =>
    sendJson(res, 200, objectResource(object, baseUrl()));

  return {
    /** `POST /upload/storage/v1/b/:bucket/o`: a whole object, or a session's Location. */
    start(
      req: IncomingMessage,
      res: ServerResponse,
      bucket: string,
      body: Buffer,
      query: URLSearchParams,
    ) {
      const type = query.get('uploadType');
      let metadata: Record<string, unknown> = {};
      let media = body;
      let mediaType = header(req, 'content-type');
      if (type === 'multipart') {
        try {
          ({ metadata, media, mediaType } = parseMultipart(body, header(req, 'content-type')));
        } catch (err) {
          throw new HttpError(400, 'invalid', (err as Error).message);
        }
      } else if (type === 'resumable') {
        const parsed: unknown = body.length === 0 ? {} : JSON.parse(body.toString('utf8'));
        metadata =
          typeof parsed === 'object' && parsed !== null ? (parsed as Record<string, unknown>) : {};
        mediaType = header(req, 'x-upload-content-type');
      } else if (type !== 'media') {
        throw new HttpError(400, 'invalid', `Unsupported uploadType ${String(type)}.`);
      }
      const name = query.get('name') ?? (typeof metadata.name === 'string' ? metadata.name : '');
      if (name === '' || Buffer.byteLength(name) > MAX_NAME_BYTES || /[\r\n]/.test(name)) {
        throw new HttpError(400, 'required', 'Object name is required and must be valid.');
      }
      buckets.bucket(bucket, true);
      buckets.checkPreconditions(bucket, name, query);
      const hashHeader = parseGoogHash(header(req, 'x-goog-hash'));
      const pending: PendingObject = {
        bucket,
        name,
        contentType:
          (typeof metadata.contentType === 'string' ? metadata.contentType : undefined) ??
          mediaType ??
          'application/octet-stream',
        metadata: metadata.metadata as Record<string, string> | undefined,
        expected: {
          crc32c: typeof metadata.crc32c === 'string' ? metadata.crc32c : hashHeader.crc32c,
          md5: typeof metadata.md5Hash === 'string' ? metadata.md5Hash : hashHeader.md5,
        },
        preconditions: query,
      };
      if (type !== 'resumable') {
        answer(res, buckets.store(pending, media));
        return;
      }
      const id = randomUUID();
      sessions.set(id, { ...pending, chunks: [], size: 0, state: 'open' });
      const location = `${baseUrl()}/upload/storage/v1/b/${encodeURIComponent(bucket)}/o?uploadType=resumable&name=${encodeURIComponent(name)}&upload_id=${id}`;
      res.writeHead(200, { Location: location, 'Content-Length': 0 });
      res.end();
    },

    session(id: string | null): Session {
      const session = id === null ? undefined : sessions.get(id);
      if (session === undefined || session.state === 'cancelled') {
        throw new HttpError(404, 'notFound', 'No such upload session.');
      }
      return session;
    },

    /** `DELETE <session uri>`: GCS answers 499 and forgets the bytes. */
    cancel(res: ServerResponse, session: Session) {
      session.state = 'cancelled';
      session.chunks = [];
      res.writeHead(499, { 'Content-Length': 0 });
      res.end();
    },

    /** `PUT <session uri>`: a chunk, the last chunk, or a status query. */
    resume(req: IncomingMessage, res: ServerResponse, session: Session, body: Buffer) {
      const range = parseContentRange(header(req, 'content-range'));
      if (range === undefined) throw new HttpError(400, 'invalid', 'Invalid Content-Range header.');
      // A finished session answers with its object, so a client retrying the last chunk
      // after a lost response learns that it went through.
      if (session.state === 'done' && session.object) return answer(res, session.object);
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
        // `bytes N-*/*`: the rest of the object came in this request, and it is complete.
        if (range.last === '*' && total === '*') total = session.size;
      }
      if (total !== '*' && session.size > total) {
        throw new HttpError(400, 'invalid', `Received ${session.size} bytes, more than ${total}.`);
      }
      if (total !== '*' && session.size === total) {
        const data = Buffer.concat(session.chunks);
        // The SDK sends the object's hashes with the last chunk.
        const hashes = parseGoogHash(header(req, 'x-goog-hash'));
        const expected = {
          crc32c: hashes.crc32c ?? session.expected.crc32c,
          md5: hashes.md5 ?? session.expected.md5,
        };
        session.object = buckets.store({ ...session, expected }, data);
        session.state = 'done';
        session.chunks = [];
        return answer(res, session.object);
      }
      const kept = Math.floor(session.size / CHUNK_QUANTUM) * CHUNK_QUANTUM;
      if (kept < session.size) {
        session.chunks = [Buffer.concat(session.chunks).subarray(0, kept)];
        session.size = kept;
      }
      res.writeHead(308, {
        ...(session.size > 0 ? { Range: `bytes=0-${session.size - 1}` } : {}),
        'Content-Length': 0,
      });
      res.end();
    },
  };
}
