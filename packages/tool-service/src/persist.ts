// Writing a call's outcome while Postgres or NATS is unreachable: retried with backoff up to
// `persistRetryMaxMs`, renewing the call's lease meanwhile so no other instance takes it over.
// Anything but a RetryableError (bad content, a refused result) is thrown at once.
import type { Logger } from 'pino';
import { backoffMs, type Lease } from '@toolmesh/bus';
import { RetryableError } from '@toolmesh/protocol';

export interface PersistLimits {
  persistRetryMaxMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function persistWrite<T>(
  limits: PersistLimits,
  what: string,
  fn: () => Promise<T>,
  lease: Lease | undefined,
  clog: Logger,
): Promise<T> {
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
}
