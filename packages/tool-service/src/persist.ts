// Writes that must not be lost to a passing outage: retried with backoff while Postgres or NATS
// is unreachable (a RetryableError), renewing the call's lease meanwhile so no other instance
// takes the call over while its result waits to be written.
import type { Logger } from 'pino';
import { backoffMs, type Lease } from '@toolmesh/bus';
import { RetryableError } from '@toolmesh/protocol';

export interface PersistLimits {
  persistRetryMaxMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export type Persist = <T>(
  what: string,
  fn: () => Promise<T>,
  lease: Lease | undefined,
  clog: Logger,
) => Promise<T>;

export function createPersist(limits: PersistLimits): Persist {
  return async (what, fn, lease, clog) => {
    const giveUpAt = Date.now() + limits.persistRetryMaxMs;
    for (let attempt = 1; ; attempt++) {
      try {
        return await fn();
      } catch (err) {
        if (!(err instanceof RetryableError) || Date.now() >= giveUpAt) throw err;
        const delay = backoffMs(attempt, limits.retryBaseMs, limits.retryMaxMs);
        clog.warn({ err, attempt, delayMs: delay }, `${what} failed; retrying`);
        await sleep(delay);
        if (lease) await lease.renew().catch(() => false);
      }
    }
  };
}
