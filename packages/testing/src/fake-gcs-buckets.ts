// The fake GCS server's state: buckets of objects in memory, the generation preconditions, the
// JSON object resource and listing in GCS's order. No HTTP here (fake-gcs.ts routes requests).
import { HttpError, objectHashes } from './fake-gcs-wire.ts';

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

/** An upload about to become an object. */
export interface PendingObject {
  bucket: string;
  name: string;
  contentType: string;
  metadata: Record<string, string> | undefined;
  /** Hashes the client sent: the upload fails unless the bytes match them. */
  expected: { crc32c?: string | undefined; md5?: string | undefined };
  /** The upload's query, with any `ifGenerationMatch` / `ifGenerationNotMatch`. */
  preconditions: URLSearchParams;
}

export interface ListPage {
  items: FakeGcsObject[];
  prefixes: string[];
  nextPageToken: string | undefined;
}

const MAX_PAGE = 1000;

/** GCS orders names by their UTF-8 bytes, not by UTF-16 code units as `sort()` would. */
export const byteOrder = (a: string, b: string) => Buffer.compare(Buffer.from(a), Buffer.from(b));

export type Buckets = ReturnType<typeof createBuckets>;

export function createBuckets(autoCreate: boolean) {
  const buckets = new Map<string, Map<string, FakeGcsObject>>();
  // GCS generations are microsecond timestamps; they only need to grow.
  let lastGeneration = Date.now() * 1000;

  const bucket = (name: string, create = false) => {
    let found = buckets.get(name);
    if (found === undefined && create && autoCreate) {
      found = new Map();
      buckets.set(name, found);
    }
    if (found === undefined) {
      throw new HttpError(404, 'notFound', 'The specified bucket does not exist.');
    }
    return found;
  };

  /** `ifGenerationMatch` (0: must not exist) and `ifGenerationNotMatch`, as GCS checks them. */
  const checkPreconditions = (bucketName: string, name: string, query: URLSearchParams) => {
    const current = buckets.get(bucketName)?.get(name)?.generation ?? '0';
    const match = query.get('ifGenerationMatch');
    const notMatch = query.get('ifGenerationNotMatch');
    if ((match !== null && match !== current) || (notMatch !== null && notMatch === current)) {
      throw new HttpError(
        412,
        'conditionNotMet',
        'At least one of the pre-conditions you specified did not hold.',
      );
    }
  };

  const sorted = (objects: Iterable<FakeGcsObject>) =>
    [...objects].sort((a, b) => byteOrder(a.name, b.name));

  return {
    bucket,
    checkPreconditions,

    createBucket(name: string): boolean {
      if (buckets.has(name)) return false;
      buckets.set(name, new Map());
      return true;
    },

    /** The live object, or 404; `generation` in the query must name the live one. */
    object(bucketName: string, name: string, query?: URLSearchParams): FakeGcsObject {
      const object = bucket(bucketName).get(name);
      const generation = query?.get('generation') ?? null;
      if (object === undefined || (generation !== null && generation !== object.generation)) {
        throw new HttpError(404, 'notFound', `No such object: ${bucketName}/${name}`);
      }
      return object;
    },

    /** Makes the upload an object, replacing any under its name, in one step. */
    store(pending: PendingObject, data: Buffer): FakeGcsObject {
      const hashes = objectHashes(data);
      const { crc32c, md5 } = pending.expected;
      if (
        (crc32c !== undefined && crc32c !== hashes.crc32c) ||
        (md5 !== undefined && md5 !== hashes.md5Hash)
      ) {
        throw new HttpError(400, 'invalid', 'Provided checksums do not match the uploaded data.');
      }
      checkPreconditions(pending.bucket, pending.name, pending.preconditions);
      const object: FakeGcsObject = {
        bucket: pending.bucket,
        name: pending.name,
        data,
        contentType: pending.contentType,
        generation: String(++lastGeneration),
        ...hashes,
        timeCreated: new Date().toISOString(),
        metadata: pending.metadata,
      };
      // One Map.set: readers and listers see the old object or the new one, never a part.
      bucket(pending.bucket, true).set(pending.name, object);
      return object;
    },

    remove(bucketName: string, name: string, query: URLSearchParams): void {
      this.object(bucketName, name, query);
      checkPreconditions(bucketName, name, query);
      bucket(bucketName).delete(name);
    },

    /** One page of `GET .../o`: prefix, delimiter, maxResults, pageToken. */
    list(bucketName: string, query: URLSearchParams): ListPage {
      const prefix = query.get('prefix') ?? '';
      const delimiter = query.get('delimiter') ?? '';
      const size = Math.min(Number(query.get('maxResults') ?? MAX_PAGE) || MAX_PAGE, MAX_PAGE);
      const token = query.get('pageToken');
      const after = token === null ? undefined : Buffer.from(token, 'base64url').toString();
      // With a delimiter, every name under one "folder" collapses into one entry.
      const entries: { key: string; object?: FakeGcsObject }[] = [];
      for (const object of sorted(bucket(bucketName).values())) {
        if (!object.name.startsWith(prefix)) continue;
        const cut = delimiter === '' ? -1 : object.name.indexOf(delimiter, prefix.length);
        if (cut < 0) entries.push({ key: object.name, object });
        else {
          const folder = object.name.slice(0, cut + delimiter.length);
          if (entries.at(-1)?.key !== folder) entries.push({ key: folder });
        }
      }
      // The token is the last key served, so a page is stable under concurrent writes.
      const rest =
        after === undefined ? entries : entries.filter((e) => byteOrder(e.key, after) > 0);
      const page = rest.slice(0, size);
      const last = page.at(-1);
      return {
        items: page.flatMap((e) => (e.object ? [e.object] : [])),
        prefixes: page.flatMap((e) => (e.object ? [] : [e.key])),
        nextPageToken:
          rest.length > page.length && last
            ? Buffer.from(last.key).toString('base64url')
            : undefined,
      };
    },

    objects(bucketName?: string): FakeGcsObject[] {
      return [...buckets.entries()]
        .filter(([name]) => bucketName === undefined || name === bucketName)
        .sort(([a], [b]) => byteOrder(a, b))
        .flatMap(([, objects]) => sorted(objects.values()));
    },

    corrupt(bucketName: string, name: string): void {
      const object = buckets.get(bucketName)?.get(name);
      if (object === undefined) throw new Error(`no object ${bucketName}/${name} to corrupt`);
      const data = object.data.length === 0 ? Buffer.from([0]) : Buffer.from(object.data);
      data[0] = (data[0] ?? 0) ^ 0xff;
      buckets.get(bucketName)?.set(name, { ...object, data });
    },
  };
}

/** The JSON object resource, as `GET .../o/:object` and the end of an upload answer it. */
export function objectResource(o: FakeGcsObject, baseUrl: string) {
  const path = `b/${o.bucket}/o/${encodeURIComponent(o.name)}`;
  return {
    kind: 'storage#object',
    id: `${o.bucket}/${o.name}/${o.generation}`,
    selfLink: `${baseUrl}/storage/v1/${path}`,
    mediaLink: `${baseUrl}/download/storage/v1/${path}?generation=${o.generation}&alt=media`,
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
}
