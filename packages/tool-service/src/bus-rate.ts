// Each project's tool calls a minute ([quotas] bus_calls_per_minute, or the project's own set
// through PUT /v1/projects/:p/quotas): one token bucket per project in Postgres
// (state.api_rate_buckets, `bus:<project>`), drawn on by every instance and every service of
// the deployment, as the api's request limit is. A bucket holds a minute's worth of calls and
// refills at the rate; a call that finds it empty is filed `rate_limited` at once and its tool
// never runs. A busy project takes a batch of tokens (a tenth of a second's worth, at most 50)
// in one statement and spends it here, so the database sees one statement per batch rather
// than per call; tokens are taken before they are spent, so no batch lets a project past its
// rate, and one not spent within a minute is dropped.
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import type { ToolResultContent } from '@toolmesh/protocol';
import { failure } from './takeover.ts';

const BATCH_MAX = 50;
const BATCH_LIFE_MS = 60_000;
/**
 * How long a project found without a rate (0) is not asked again: the limit is read with the
 * tokens, and a project that has none would otherwise cost a statement per call.
 */
const OFF_RECHECK_MS = 5_000;
/** Projects remembered at once; the oldest go first. */
const HELD_MAX = 10_000;

export interface BusRate {
  /** Undefined when the call may run; else the failed result to file instead. */
  take(projectId: string): Promise<ToolResultContent | undefined>;
}

type Held = { tokens: number; until: number; perMinute: number };

export function createBusRate(
  store: CallsStore & RegistryStore,
  defaultPerMinute: number,
): BusRate {
  const held = new Map<string, Held>();
  // One statement per project at a time: calls arriving while it runs wait for its batch rather
  // than each asking for one (the first would take the bucket and the rest find it empty).
  const asking = new Map<string, Promise<ToolResultContent | undefined>>();
  const remember = (projectId: string, v: Held) => {
    held.delete(projectId);
    held.set(projectId, v);
    if (held.size > HELD_MAX) held.delete(held.keys().next().value!);
  };

  const ask = async (projectId: string): Promise<ToolResultContent | undefined> => {
    const now = Date.now();
    const known = held.get(projectId)?.perMinute || defaultPerMinute;
    const want = Math.max(1, Math.min(BATCH_MAX, Math.floor(known / 600)));
    const { perMinute, taken, waitMs } = await store.rateBuckets.takeBusCalls(
      projectId,
      defaultPerMinute,
      want,
    );
    if (perMinute === 0) {
      remember(projectId, { tokens: 0, until: now + OFF_RECHECK_MS, perMinute });
      return undefined;
    }
    if (taken > 0) {
      remember(projectId, { tokens: taken, until: now + BATCH_LIFE_MS, perMinute });
      return undefined;
    }
    remember(projectId, { tokens: 0, until: now + BATCH_LIFE_MS, perMinute });
    const retryAfterSec = Math.max(1, Math.ceil(waitMs / 1000));
    return failure(
      'rate_limited',
      `project ${projectId} is over its rate of ${perMinute} tool calls a minute; retry in ${retryAfterSec} s`,
      { quota: 'bus_calls_per_minute', limit: perMinute, retry_after_sec: retryAfterSec },
    );
  };

  return {
    take: async (projectId) => {
      for (;;) {
        const mine = held.get(projectId);
        if (mine && Date.now() < mine.until) {
          if (mine.perMinute === 0) return undefined;
          if (mine.tokens > 0) {
            mine.tokens--;
            return undefined;
          }
        }
        const running = asking.get(projectId);
        if (running) {
          // Refused with the batch that found the bucket empty; else spend from what it took.
          const refused = await running;
          if (refused) return refused;
          continue;
        }
        const mineNow = ask(projectId).finally(() => asking.delete(projectId));
        asking.set(projectId, mineNow);
        const refused = await mineNow;
        if (refused) return refused;
      }
    },
  };
}
