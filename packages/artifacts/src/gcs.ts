// The Google Cloud Storage adapter, on @google-cloud/storage. Keys live under an optional prefix
// in one bucket. GCS makes an object visible only when its upload completes, so readers see the
// old object or the new one whole and concurrent puts leave the last finished one. A put that
// fails (too large, aborted, source error) never completes its upload, so no object appears: a
// resumable upload names its total size only on its last chunk, which the SDK sends only once
// the source has ended, and a multipart body cut short lacks its closing delimiter.
import { Storage } from '@google-cloud/storage';
import type { File, FileMetadata, StorageOptions } from '@google-cloud/storage';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import { ArtifactError } from './errors.ts';
import { assertKey, assertPrefix, keyProblem, MAX_KEY_BYTES } from './key.ts';
import { checkMaxBytes, createMeter, tooLarge } from './meter.ts';
import { ArtifactStoreKind, gcsPrefixProblem } from './store.ts';
import type { ArtifactStat, ArtifactStore, PutResult } from './store.ts';

export interface GcsArtifactStoreOptions {
  bucket: string;
  /** Keys are stored as `<prefix>/<key>`; empty or absent for the bucket's root. */
  prefix?: string;
  /**
   * An emulator or fake server (`http://127.0.0.1:4443`). Requests to it carry no credentials:
   * the SDK skips auth for a custom endpoint unless told otherwise, which is what emulators want.
   */
  apiEndpoint?: string;
  projectId?: string;
  /**
   * A service account key. Without one the SDK finds Application Default Credentials, and
   * `signedUrl` answers undefined (see there). google-auth-library warns, when the store is
   * made, that this option is deprecated; its replacement (a JWT client as `authClient`) leaves
   * the URL signer unable to learn the account's email without a metadata server.
   */
  credentials?: { client_email: string; private_key: string };
  /**
   * Buffers up to this size go up in one multipart request; anything larger, and every stream,
   * uses a resumable upload. Default 5 MiB.
   */
  multipartMaxBytes?: number;
  /**
   * Resumable uploads send chunks of this size, each buffered in memory; only the last one names
   * the total size, so an upload that fails midway can never complete a truncated object. A
   * multiple of 256 KiB (GCS persists whole 256 KiB units only). Default 8 MiB, Google's
   * recommended minimum. The SDK retries failed chunks only for uploads with a generation
   * precondition (its default idempotency strategy), which puts here do not have: a failed
   * chunk fails the put.
   */
  chunkSizeBytes?: number;
  /** Objects per list request; GCS caps it at 1000 (the default). */
  listPageSize?: number;
}

const MiB = 1024 * 1024;
const CHUNK_QUANTUM = 256 * 1024;
/** v4 signed URLs live at most seven days. */
const MAX_SIGNED_URL_TTL_SEC = 7 * 24 * 3600;

export function createGcsArtifactStore(options: GcsArtifactStoreOptions): ArtifactStore {
  const { bucket: bucketName, apiEndpoint, projectId, credentials } = options;
  if (bucketName === '') throw new RangeError('gcs: bucket must not be empty');
  const prefixProblem = gcsPrefixProblem(options.prefix ?? '');
  if (prefixProblem !== undefined) {
    throw new RangeError(`gcs: prefix ${JSON.stringify(options.prefix)} ${prefixProblem}`);
  }
  const prefix = (options.prefix ?? '').replace(/\/$/, '');
  const base = prefix === '' ? '' : `${prefix}/`;
  const multipartMaxBytes = options.multipartMaxBytes ?? 5 * MiB;
  const chunkSize = options.chunkSizeBytes ?? 8 * MiB;
  if (!(Number.isSafeInteger(chunkSize) && chunkSize > 0 && chunkSize % CHUNK_QUANTUM === 0)) {
    throw new RangeError(`gcs: chunkSizeBytes must be a positive multiple of 256 KiB`);
  }
  const pageSize = options.listPageSize ?? 1000;

  const storageOptions: StorageOptions = {};
  if (apiEndpoint !== undefined) storageOptions.apiEndpoint = apiEndpoint;
  if (projectId !== undefined) storageOptions.projectId = projectId;
  if (credentials !== undefined) storageOptions.credentials = credentials;
  const bucket = new Storage(storageOptions).bucket(bucketName);

  /** The object name of a key, refused when the prefix pushes it past GCS's 1024 bytes. */
  const fileOf = (key: string): File => {
    const name = base + assertKey(key);
    if (Buffer.byteLength(name) > MAX_KEY_BYTES) {
      throw new ArtifactError(
        'invalid_key',
        `invalid artifact key ${JSON.stringify(key)}: with the prefix it is over ${MAX_KEY_BYTES} bytes`,
        { details: { key, reason: 'too long with the prefix' } },
      );
    }
    return bucket.file(name);
  };
  const uriOf = (key: string) => `gcs://${bucketName}/${base}${key}`;
  const notFound = (key: string, cause: unknown) =>
    new ArtifactError('not_found', `no artifact at ${JSON.stringify(key)}`, {
      details: { key },
      cause,
    });
  const statOf = (key: string, metadata: FileMetadata): ArtifactStat => ({
    key,
    uri: uriOf(key),
    size: Number(metadata.size ?? 0),
    updatedAt: new Date(metadata.updated ?? metadata.timeCreated ?? 0),
    contentType: metadata.contentType,
  });

  return {
    kind: ArtifactStoreKind.gcs,

    async put(key, source, putOptions = {}): Promise<PutResult> {
      const file = fileOf(key);
      const { maxBytes, signal, contentType } = putOptions;
      checkMaxBytes(maxBytes);
      const meter = createMeter(key, maxBytes);
      try {
        // A buffer that is already too big fails before any request is made.
        if (
          source instanceof Uint8Array &&
          maxBytes !== undefined &&
          source.byteLength > maxBytes
        ) {
          throw tooLarge(key, maxBytes);
        }
        const small = source instanceof Uint8Array && source.byteLength <= multipartMaxBytes;
        const input = source instanceof Uint8Array ? Readable.from([Buffer.from(source)]) : source;
        // crc32c: the SDK checks the checksum GCS computed against its own and deletes the
        // object on a mismatch. Without a contentType the SDK guesses one from the name.
        const upload = file.createWriteStream({
          resumable: !small,
          validation: 'crc32c',
          ...(small ? {} : { chunkSize }),
          ...(contentType === undefined ? {} : { contentType }),
        });
        await pipeline(input, meter.stream, upload, signal === undefined ? {} : { signal });
      } catch (err) {
        if (source instanceof Readable && !source.destroyed) source.destroy();
        throw err;
      }
      return { uri: uriOf(key), ...meter.result() };
    },

    async get(key) {
      const file = fileOf(key);
      // The SDK checks the bytes against the object's crc32c as they arrive and fails the
      // stream on a mismatch.
      const stream = file.createReadStream({ validation: 'crc32c' });
      try {
        await responded(stream);
      } catch (err) {
        stream.destroy();
        if (statusOf(err) === 404) throw notFound(key, err);
        throw err;
      }
      return stream;
    },

    async stat(key) {
      const file = fileOf(key);
      try {
        const [metadata] = await file.getMetadata();
        return statOf(key, metadata);
      } catch (err) {
        if (statusOf(err) === 404) return undefined;
        throw err;
      }
    },

    async delete(key) {
      const file = fileOf(key);
      try {
        await file.delete();
        return true;
      } catch (err) {
        if (statusOf(err) === 404) return false;
        throw err;
      }
    },

    async *list(listPrefix) {
      assertPrefix(listPrefix);
      let pageToken: string | undefined;
      do {
        const [files, next] = await bucket.getFiles({
          prefix: base + listPrefix,
          autoPaginate: false,
          maxResults: pageSize,
          ...(pageToken === undefined ? {} : { pageToken }),
        });
        for (const file of files) {
          const key = file.name.slice(base.length);
          // Objects written by something else under names that are not keys are not ours.
          if (keyProblem(key) === undefined) yield statOf(key, file.metadata);
        }
        pageToken = next !== null && 'pageToken' in next ? next.pageToken : undefined;
      } while (pageToken !== undefined && pageToken !== '');
    },

    // Signing needs a private key. With one in `credentials` the SDK signs locally. Without
    // one (ADC on GKE or Cloud Run) it would ask the IAM signBlob API for every URL: a network
    // round trip and the Token Creator role on the service account, which an emulator has no
    // counterpart for. Callers treat undefined as "stream it through `get`", as with fs.
    async signedUrl(key, ttlSec) {
      const file = fileOf(key);
      if (credentials === undefined) return undefined;
      if (!(Number.isSafeInteger(ttlSec) && ttlSec > 0 && ttlSec <= MAX_SIGNED_URL_TTL_SEC)) {
        throw new RangeError(
          `ttlSec must be an integer in 1..${MAX_SIGNED_URL_TTL_SEC}, got ${ttlSec}`,
        );
      }
      const [url] = await file.getSignedUrl({
        version: 'v4',
        action: 'read',
        expires: Date.now() + ttlSec * 1000,
      });
      return url;
    },
  };
}

const ignore = () => {};

/** The HTTP status of an SDK error (`ApiError.code`), if it has one. */
function statusOf(err: unknown): number | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  return typeof err.code === 'number' ? err.code : undefined;
}

/**
 * Starts the download and waits for the response headers: rejects with the SDK's error when
 * the object is missing, resolves (with the bytes left unread) when it is there. The SDK's
 * read stream sends its request only once it is read from, and reports a 404 only after
 * reading the error body, so `response` with an error status is not yet the end.
 */
function responded(stream: Readable): Promise<void> {
  return new Promise((resolve, reject) => {
    const onError = (err: unknown) => {
      stream.off('response', onResponse);
      reject(err instanceof Error ? err : new Error(String(err)));
    };
    const onResponse = (res: { statusCode?: number }) => {
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) {
        stream.off('error', onError);
        stream.off('response', onResponse);
        // The SDK fills the stream's buffer before anyone reads, and a checksum mismatch of a
        // small object can fail it before the caller has attached a listener: an unheard
        // 'error' would crash the process. The error stays on the stream (`errored`), and
        // every reader (pipeline, async iteration, stream/consumers) still rejects with it.
        stream.on('error', ignore);
        resolve();
      }
    };
    stream.once('error', onError);
    stream.on('response', onResponse);
    // read(0) asks for data without taking any: it makes the SDK send the request.
    stream.read(0);
  });
}
