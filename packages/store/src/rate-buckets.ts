// Token buckets shared by every instance, refilled by the database's clock, a token taken under
// the row's lock in one statement: the tools service's rate limits (state.rate_buckets, one per
// project and tool) and the api's request limits (state.api_rate_buckets, one per API key and
// one for the deployment's admin key).
import type { Db } from './db.ts';

export interface BucketSpec {
  perSecond: number;
  burst: number;
}

export interface RateBucketsRepo {
  /** 0 when a token was taken; otherwise milliseconds until one is there. */
  take(projectId: string, toolName: string, spec: BucketSpec): Promise<number>;
  /**
   * Up to `want` tokens of an api request bucket (see apiBucket) at once: how many were taken,
   * and when none could be, milliseconds until one is there.
   */
  takeApi(
    bucket: string,
    spec: BucketSpec,
    want: number,
  ): Promise<{ taken: number; waitMs: number }>;
}

/** The api's request bucket of an API key, or of the deployment's admin key. */
export const apiBucket = (who: { kind: 'admin' } | { kind: 'key'; keyId: string }): string =>
  who.kind === 'admin' ? 'admin' : `key:${who.keyId}`;

export function createRateBucketsRepo(db: Db): RateBucketsRepo {
  return {
    take: async (projectId, toolName, spec) => {
      const rows = await db.query<{ wait: number }>(
        'rate_buckets_take',
        'SELECT state.take_rate_token($1, $2, $3, $4) AS wait',
        [projectId, toolName, spec.perSecond, spec.burst],
      );
      return Math.ceil((rows[0]?.wait ?? 0) * 1000);
    },
    takeApi: async (bucket, spec, want) => {
      const rows = await db.query<{ taken: number; wait: number }>(
        'api_rate_buckets_take',
        'SELECT taken, wait FROM state.take_api_tokens($1, $2, $3, $4)',
        [bucket, spec.perSecond, spec.burst, want],
      );
      return { taken: rows[0]?.taken ?? 0, waitMs: Math.ceil((rows[0]?.wait ?? 0) * 1000) };
    },
  };
}
