// Requests per key: a token bucket per API key, and one for the deployment's admin key, kept in
// Postgres (state.api_rate_buckets) so every api instance draws on the same bucket, as the
// tools service's rate limits do. A bucket holds a minute's worth of requests and refills at
// the configured rate; an empty one answers 429 `rate_limited` with Retry-After. A limit of 0
// turns the check off (and costs no query).
import { apiBucket, type Store } from '@toolmesh/store';
import type { ApiConfig } from '@toolmesh/config';
import { ApiError } from './errors.ts';

type Who = { kind: 'admin' } | { kind: 'project'; keyId: string };

export function createApiRateLimit(
  store: Store,
  config: Pick<ApiConfig, 'rate_limit_per_minute' | 'admin_rate_limit_per_minute'>,
): (who: Who) => Promise<void> {
  return async (who) => {
    const perMinute =
      who.kind === 'admin' ? config.admin_rate_limit_per_minute : config.rate_limit_per_minute;
    if (perMinute === 0) return;
    const bucket = apiBucket(who.kind === 'admin' ? who : { kind: 'key', keyId: who.keyId });
    const waitMs = await store.rateBuckets.takeApi(bucket, {
      perSecond: perMinute / 60,
      burst: perMinute,
    });
    if (waitMs === 0) return;
    const retryAfterSec = Math.max(1, Math.ceil(waitMs / 1000));
    throw new ApiError(
      'rate_limited',
      `this key is over its limit of ${perMinute} requests a minute; retry in ${retryAfterSec} s`,
      { retry_after_sec: retryAfterSec, limit_per_minute: perMinute },
    );
  };
}
