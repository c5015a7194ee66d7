// A Postgres outage, told once: the pool notes the first failed connection or query of an
// outage in one warning, and the first success after it in one "recovered" line. Every error of
// the outage is remembered here, so a service's logger can turn the warnings its loops write
// about the same outage (one per tick and per call) into debug lines (isReportedOutage).
import type { Logger } from 'pino';
import { isRetryablePgError } from './errors.ts';

const reported = new WeakSet<object>();

/** Whether the error (or one of its causes) belongs to an outage the pool has reported. */
export function isReportedOutage(err: unknown): boolean {
  for (let e = err, depth = 0; typeof e === 'object' && e !== null && depth < 8; depth++) {
    if (reported.has(e)) return true;
    e = (e as { cause?: unknown }).cause;
  }
  return false;
}

/** A failure that means the server cannot be reached, not a failed statement. */
function isConnectionFailure(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  // 40xxx (serialization, deadlock) is retryable, but the server is there.
  if (typeof code === 'string' && code.startsWith('40')) return false;
  return isRetryablePgError(err);
}

export interface OutageWatch {
  failed(err: unknown): void;
  succeeded(): void;
}

export function createOutageWatch(log: Logger, now: () => number = Date.now): OutageWatch {
  let since: number | undefined;
  let failures = 0;
  return {
    failed: (err) => {
      if (!isConnectionFailure(err) || typeof err !== 'object' || err === null) return;
      reported.add(err);
      failures++;
      if (since !== undefined) return;
      since = now();
      const e = err as { code?: string; message?: string };
      log.warn(
        { code: e.code, reason: e.message },
        'Postgres unreachable: work that needs it waits and is retried; this is said once, and again when it answers',
      );
    },
    succeeded: () => {
      if (since === undefined) return;
      log.info(
        { outage_ms: now() - since, failed_attempts: failures },
        'Postgres recovered: it answers again',
      );
      since = undefined;
      failures = 0;
    },
  };
}
