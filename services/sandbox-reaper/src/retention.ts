// The execution log's retention, run by the sandbox-reaper daemon beside its sandbox passes
// (both are timers over Postgres that any number of instances may run at once), and the expiry
// of POST /executions' Idempotency-Key records, which runs even when executions are kept. A pass deletes
// batch after batch until a batch comes back short, yielding between batches; each batch is one
// short statement over rows locked with SKIP LOCKED, so tool services closing rows never wait.
import type { Logger } from 'pino';
import type { RetentionConfig } from '@toolmesh/config';
import type { CallsStore, OpsStore } from '@toolmesh/store';

export interface RetentionLoop {
  /** One pass now: every batch due. Resolves with what it deleted. */
  runPass(): Promise<{
    executions: number;
    cards: number;
    cancels: number;
    idempotency_keys: number;
    batches: number;
  }>;
  stop(): Promise<void>;
}

/** Batches of one pass at most, so a huge backlog still lets the loop stop between passes. */
const MAX_BATCHES_PER_PASS = 100;

export function startRetention(
  store: CallsStore & OpsStore,
  cfg: RetentionConfig,
  logger: Logger,
  /**
   * How long a stored cancel of a call that never ran must stand: as long as a copy of the call
   * may still arrive (the command stream keeps it, the lease bucket its tombstone), and at least
   * as long as executions are kept.
   */
  cancelsStandSec: number,
): RetentionLoop {
  const log = logger.child({ component: 'retention' });
  const executions = cfg.executions_max_age_hours > 0;
  let stopping = false;
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<unknown> = Promise.resolve();

  const runPass = async () => {
    const total = { executions: 0, cards: 0, cancels: 0, idempotency_keys: 0, batches: 0 };
    const standSec = Math.max(cancelsStandSec, cfg.executions_max_age_hours * 3600);
    while (!stopping && total.batches < MAX_BATCHES_PER_PASS) {
      const n = await store.idempotencyKeys.deleteExpired(
        cfg.idempotency_keys_max_age_hours,
        cfg.batch_size,
      );
      total.batches++;
      total.idempotency_keys += n;
      if (n < cfg.batch_size) break;
      await new Promise((r) => setImmediate(r));
    }
    while (executions && !stopping && total.batches < MAX_BATCHES_PER_PASS) {
      const b = await store.retention.deleteExpiredExecutions(
        cfg.executions_max_age_hours,
        cfg.batch_size,
      );
      total.batches++;
      total.executions += b.executions;
      total.cards += b.cards;
      if (b.executions < cfg.batch_size) break;
      await new Promise((r) => setImmediate(r));
    }
    while (executions && !stopping && total.batches < MAX_BATCHES_PER_PASS) {
      const n = await store.retention.deleteOrphanCancels(standSec, cfg.batch_size);
      total.batches++;
      total.cancels += n;
      if (n < cfg.batch_size) break;
      await new Promise((r) => setImmediate(r));
    }
    if (total.executions > 0 || total.cancels > 0 || total.idempotency_keys > 0)
      log.info(total, 'expired rows deleted');
    return total;
  };

  const schedule = (delayMs: number) => {
    if (stopping) return;
    timer = setTimeout(() => {
      inFlight = runPass().then(
        () => schedule(cfg.interval_sec * 1000),
        (err: unknown) => {
          log.warn({ err }, 'retention pass failed; retrying next interval');
          schedule(cfg.interval_sec * 1000);
        },
      );
    }, delayMs);
  };
  schedule(0);
  log.info(
    {
      max_age_hours: cfg.executions_max_age_hours,
      idempotency_keys_max_age_hours: cfg.idempotency_keys_max_age_hours,
      interval_sec: cfg.interval_sec,
    },
    executions ? 'execution retention on' : 'executions kept for ever; idempotency keys expire',
  );
  return {
    runPass,
    stop: async () => {
      stopping = true;
      clearTimeout(timer);
      await inFlight.catch(() => undefined);
    },
  };
}
