// The artifact store's contract: skill zips and command outputs, streamed in and out of a
// backend. One interface, one adapter per backend (`fs.ts` now, `gcs.ts` with the skills
// issue); callers receive an `ArtifactStore` through their options and never learn which.
import type { Readable } from 'node:stream';
import { z } from 'zod';

export const ArtifactStoreKind = { fs: 'fs' } as const;
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

/** Which backend, and its settings. A discriminated union: new adapters add a member. */
export const ArtifactStoreConfig = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal(ArtifactStoreKind.fs),
    /** The folder holding every object; created on first write. */
    root: z.string().min(1),
  }),
]);
export type ArtifactStoreConfig = z.infer<typeof ArtifactStoreConfig>;
