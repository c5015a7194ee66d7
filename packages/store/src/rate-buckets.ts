// Token buckets of the tools service's rate limits (state.rate_buckets), one per project and
// tool, shared by every instance: a take is one call of state.take_rate_token, which refills by
// the database's clock and takes a token under the row's lock.
import type { Db } from './db.ts';

export interface BucketSpec {
  perSecond: number;
  burst: number;
}

export interface RateBucketsRepo {
  /** 0 when a token was taken; otherwise milliseconds until one is there. */
  take(projectId: string, toolName: string, spec: BucketSpec): Promise<number>;
}

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
  };
}
