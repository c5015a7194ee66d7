// Requests per key: a token bucket per API key, and one for the deployment's admin key, kept in
// Postgres (state.api_rate_buckets) so every api instance draws on the same bucket, as the
// tools service's rate limits do. A bucket holds a minute's worth of requests and refills at
// the configured rate; an empty one answers 429 `rate_limited` with Retry-After. A limit of 0
// turns the check off (and costs no query). A busy key takes a batch of tokens (a tenth of a
// second's worth, at most 50) in one statement and spends it here: the database sees one
// statement per batch instead of one per request, and one at a time per key: a burst's requests
// wait for the batch being taken. Tokens are taken before they are spent, so a batch never lets
// a key past its limit; a batch not spent within a minute is dropped.
import { apiBucket, type CallsStore } from '@toolmesh/store';
import type { ApiConfig } from '@toolmesh/config';
import { ApiError } from './errors.ts';

type Who = { kind: 'admin' } | { kind: 'project'; keyId: string };

const BATCH_MAX = 50;
const BATCH_LIFE_MS = 60_000;
/** Buckets with a batch in hand at once; the oldest go first. */
const HELD_MAX = 10_000;

export function createApiRateLimit(
  store: CallsStore,
  config: Pick<ApiConfig, 'rate_limit_per_minute' | 'admin_rate_limit_per_minute'>,
): (who: Who) => Promise<void> {
  const held = new Map<string, { tokens: number; until: number }>();
  // One statement per bucket at a time: requests arriving while it runs wait for its batch
  // rather than each asking for one (a burst of a key's requests would otherwise send a
  // statement each, all waiting on the bucket's row lock). Resolves to the wait the bucket
  // named when it had no token to give, 0 when it gave some.
  const asking = new Map<string, Promise<number>>();
  const spend = (bucket: string): boolean => {
    const mine = held.get(bucket);
    if (!mine || mine.tokens <= 0 || Date.now() >= mine.until) return false;
    mine.tokens--;
    return true;
  };
  const take = async (bucket: string, perMinute: number): Promise<number> => {
    const want = Math.max(1, Math.min(BATCH_MAX, Math.floor(perMinute / 600)));
    const { taken, waitMs } = await store.rateBuckets.takeApi(
      bucket,
      { perSecond: perMinute / 60, burst: perMinute },
      want,
    );
    if (taken === 0) return Math.max(1, waitMs);
    held.delete(bucket);
    held.set(bucket, { tokens: taken, until: Date.now() + BATCH_LIFE_MS });
    if (held.size > HELD_MAX) held.delete(held.keys().next().value!);
    return 0;
  };
  const limit = async (who: Who): Promise<void> => {
    const perMinute =
      who.kind === 'admin' ? config.admin_rate_limit_per_minute : config.rate_limit_per_minute;
    if (perMinute === 0) return;
    const bucket = apiBucket(who.kind === 'admin' ? who : { kind: 'key', keyId: who.keyId });
    if (spend(bucket)) return;
    let pending = asking.get(bucket);
    if (pending === undefined) {
      pending = take(bucket, perMinute).finally(() => asking.delete(bucket));
      asking.set(bucket, pending);
    }
    const waitMs = await pending;
    if (spend(bucket)) return;
    // The batch this request waited for went to the requests ahead of it: it asks again.
    if (waitMs === 0) return limit(who);
    const retryAfterSec = Math.max(1, Math.ceil(waitMs / 1000));
    throw new ApiError(
      'rate_limited',
      `this key is over its limit of ${perMinute} requests a minute; retry in ${retryAfterSec} s`,
      { retry_after_sec: retryAfterSec, limit_per_minute: perMinute },
    );
  };
  return limit;
}
