// The artifact store's contract: skill zips and command outputs, streamed in and out of a
// backend. One interface, one adapter per backend (`fs.ts`, `gcs.ts`); callers receive an
// `ArtifactStore` through their options and never learn which.
import type { Readable } from 'node:stream';
import { z } from 'zod';
import { keyProblem } from './key.ts';

export const ArtifactStoreKind = { fs: 'fs', gcs: 'gcs' } as const;
export type ArtifactStoreKind = (typeof ArtifactStoreKind)[keyof typeof ArtifactStoreKind];

export interface PutOptions {
  /** Stored with the object where the backend keeps metadata (GCS); the fs adapter ignores it. */
  contentType?: string;
  /** The write fails with `too_large`, leaving nothing behind, once more bytes than this arrive. */
  maxBytes?: number;
  /** Aborts the upload; nothing is stored. */
  signal?: AbortSignal;
}

export interface PutResult {
  /** Where the object lives, for logs and records: `file:///abs/path`, `gcs://bucket/prefix/key`. */
  uri: string;
  size: number;
  /** Lowercase hex sha256 of the bytes written, computed while streaming. */
  sha256: string;
}

export interface ArtifactStat {
  key: string;
  uri: string;
  size: number;
  updatedAt: Date;
  /** Undefined where the backend keeps no metadata (fs). */
  contentType: string | undefined;
}

export interface ArtifactStore {
  readonly kind: ArtifactStoreKind;
  /**
   * Streams `source` into the object at `key`, replacing any object there. Readers see either
   * the old object or the complete new one, never a part; concurrent puts of one key leave one
   * of them whole.
   */
  put(key: string, source: Readable | Uint8Array, options?: PutOptions): Promise<PutResult>;
  /** A stream of the object's bytes; rejects with `not_found` when there is none. */
  get(key: string): Promise<Readable>;
  /** The object's size and times, or undefined when there is none. */
  stat(key: string): Promise<ArtifactStat | undefined>;
  /** Removes the object; true when there was one. */
  delete(key: string): Promise<boolean>;
  /** Objects whose key starts with `prefix` (a plain string prefix), in key order. */
  list(prefix: string): AsyncIterable<ArtifactStat>;
  /** A time-limited download URL, or undefined when the backend has none (fs). */
  signedUrl(key: string, ttlSec: number): Promise<string | undefined>;
}

/** GCS bucket names: lowercase letters, digits, `-`, `_`, `.`; a letter or digit at each end. */
const BUCKET_NAME = /^[a-z0-9][a-z0-9._-]{1,220}[a-z0-9]$/;

/** Why `prefix` cannot prefix GCS keys, or undefined: it must be empty or a valid key (a
 * trailing `/` is dropped). */
export function gcsPrefixProblem(prefix: string): string | undefined {
  const body = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  return body === '' ? undefined : keyProblem(body);
}

/** Which backend, and its settings. A discriminated union: new adapters add a member. */
export const ArtifactStoreConfig = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal(ArtifactStoreKind.fs),
    /** The folder holding every object; created on first write. */
    root: z.string().min(1),
  }),
  z.strictObject({
    kind: z.literal(ArtifactStoreKind.gcs),
    bucket: z.string().regex(BUCKET_NAME, 'a GCS bucket name: 3-222 of [a-z0-9._-]'),
    /** Every key lives under `<prefix>/`; empty (or absent) for the bucket's root. */
    prefix: z
      .string()
      .refine((p) => gcsPrefixProblem(p) === undefined, { error: 'a valid key or empty' })
      .optional(),
    /** An emulator or fake server, e.g. `http://127.0.0.1:4443`; requests then carry no auth. */
    api_endpoint: z.url({ protocol: /^https?$/ }).optional(),
    project_id: z.string().min(1).optional(),
    /** A service account key; only needed for signed URLs (otherwise ADC is used). */
    credentials: z
      .strictObject({ client_email: z.string().min(1), private_key: z.string().min(1) })
      .optional(),
  }),
]);
export type ArtifactStoreConfig = z.infer<typeof ArtifactStoreConfig>;
