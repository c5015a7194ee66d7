// Writing what a call produced: retried while Postgres or NATS is unreachable (renewing the
// lease meanwhile, so no other instance takes the call over), and the failed result a bad call
// is answered with.
import type { Logger } from 'pino';
import { backoffMs, type Lease } from '@toolmesh/bus';
import {
  RetryableError,
  statusForCode,
  type ErrorBody,
  type ErrorCode,
  type ToolResultContent,
} from '@toolmesh/protocol';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function persistWithRetry<T>(
  limits: { persistRetryMaxMs: number; retryBaseMs: number; retryMaxMs: number },
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

/** A failed result with the status its code implies. */
export function failure(
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): ToolResultContent {
  const error: ErrorBody = details ? { code, message, details } : { code, message };
  return { status: statusForCode(code), error, duration_ms: 0 };
}
