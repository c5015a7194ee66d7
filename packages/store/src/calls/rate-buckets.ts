// Token buckets shared by every instance, refilled by the database's clock, a token taken under
// the row's lock in one statement: the tools service's rate limits (state.rate_buckets, one per
// project and tool), the api's request limits (state.api_rate_buckets, one per API key and one
// for the deployment's admin key) and each project's bus call rate (in the same table, one
// bucket per project).
import type { Db } from '../core/db.ts';

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
  /**
   * Up to `want` tokens of a project's bus call bucket (busBucket) at once, at the project's own
   * [quotas] bus_calls_per_minute when it has one, else at `defaultPerMinute`; a bucket holds a
   * minute's worth. `perMinute` is the limit that applied; 0 (off) takes nothing and costs no
   * bucket row.
   */
  takeBusCalls(
    projectId: string,
    defaultPerMinute: number,
    want: number,
  ): Promise<{ perMinute: number; taken: number; waitMs: number }>;
}

/** The api's request bucket of an API key, or of the deployment's admin key. */
export const apiBucket = (who: { kind: 'admin' } | { kind: 'key'; keyId: string }): string =>
  who.kind === 'admin' ? 'admin' : `key:${who.keyId}`;

/** A project's bus call bucket ([quotas] bus_calls_per_minute), beside the api's. */
export const busBucket = (projectId: string): string => `bus:${projectId}`;

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
    takeBusCalls: async (projectId, defaultPerMinute, want) => {
      // The project's own limit is read in the same statement: a change through the quotas
      // route binds at the next batch, with no cache to expire. The lateral's one-time filter
      // keeps a limit of 0 from touching a bucket at all.
      const rows = await db.query<{
        per_minute: number;
        taken: number | null;
        wait: number | null;
      }>(
        'bus_rate_buckets_take',
        `SELECT l.per_minute, t.taken, t.wait
           FROM (SELECT coalesce(
                   (SELECT (settings->'quotas'->>'bus_calls_per_minute')::integer
                      FROM resource.projects WHERE project_id = $1),
                   $2::integer) AS per_minute) l
           LEFT JOIN LATERAL (
             SELECT taken, wait FROM state.take_api_tokens(
               $3, l.per_minute / 60.0, l.per_minute::double precision, $4)
              WHERE l.per_minute > 0) t ON true`,
        [projectId, defaultPerMinute, busBucket(projectId), want],
      );
      const row = rows[0];
      return {
        perMinute: row?.per_minute ?? defaultPerMinute,
        taken: row?.taken ?? 0,
        waitMs: Math.ceil((row?.wait ?? 0) * 1000),
      };
    },
  };
}
