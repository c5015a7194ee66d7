// The sandbox-reaper's side of state.sandboxes: take a batch of expired sandboxes, record each
// destroy or failure. Several reapers may run at once: a batch is taken in one statement with
// `FOR UPDATE SKIP LOCKED` and marked `reaping` under the reaper's name and a claim expiry, so
// two reapers never take the same row and a crashed reaper's rows are taken again once its
// claim lapses. A failed destroy stays `reaping` and waits for next_attempt_at (exponential
// backoff), so nothing is left in an error state for ever.
import type { Db } from '../core/db.ts';
import type { SandboxProviderKind } from './sandboxes.ts';

/** Why a row was taken: past its idle or hard expiry, or a retry of a destroy that failed. */
export type ReapReason = 'idle' | 'hard' | 'retry';

export interface ReapClaim {
  sandbox_id: string;
  provider: SandboxProviderKind;
  project_id: string;
  session_key: string;
  reap_attempts: number;
  why: ReapReason;
}

export interface ReapFailure {
  reap_attempts: number;
  next_attempt_at: Date;
}

/** A background process recorded in a running task or job head: pid plus start-time proof. */
export interface HeadProcess {
  pid: number;
  proc_start_time: string;
}

export interface SandboxReapRepo {
  /**
   * Takes up to `limit` due sandboxes for `owner` for `claimMs`: active ones past their hard
   * expiry, or past their idle expiry with no running task or job; `reaping` ones whose claim
   * lapsed (a crashed reaper, a retry that is due). Rows locked by a live tool call are left.
   */
  claimDue(o: { owner: string; limit: number; claimMs: number }): Promise<ReapClaim[]>;
  /** Records a destroy; false when the claim was no longer `owner`'s. */
  destroyed(sandboxId: string, owner: string): Promise<boolean>;
  /** Records a failed destroy and when to try again: base * 2^(attempts so far), at most max. */
  failed(
    sandboxId: string,
    owner: string,
    error: string,
    backoff: { baseMs: number; maxMs: number },
  ): Promise<ReapFailure | undefined>;
  /** Expired sandboxes left alone right now: a live lock holds them, or a task runs in them. */
  countHeld(): Promise<number>;
  /** Processes of running task and job heads in a sandbox, to be proven and killed. */
  processesOf(sandboxId: string): Promise<HeadProcess[]>;
}

const RUNNING_HEAD = `(EXISTS (SELECT 1 FROM state.skill_tasks t
      WHERE t.sandbox_id = c.sandbox_id AND t.status = 'running')
    OR EXISTS (SELECT 1 FROM state.skill_jobs j
      WHERE j.sandbox_id = c.sandbox_id AND j.status = 'running'))`;

export function createSandboxReapRepo(db: Db): SandboxReapRepo {
  return {
    claimDue: async (o) =>
      db.query<ReapClaim>(
        'sandbox_reap_claim',
        `UPDATE state.sandboxes s
         SET state = 'reaping', lock_owner = $1, lock_expires_at = now() + $3::double precision * interval '1 millisecond'
         FROM (
           SELECT c.sandbox_id,
             CASE WHEN c.state = 'reaping' THEN 'retry'
                  WHEN c.hard_expires_at <= now() THEN 'hard' ELSE 'idle' END AS why
           FROM state.sandboxes c
           WHERE c.state IN ('active', 'reaping')
             AND least(c.idle_expires_at, c.hard_expires_at) <= now()
             AND (c.lock_owner IS NULL OR c.lock_expires_at <= now())
             AND (c.next_attempt_at IS NULL OR c.next_attempt_at <= now())
             AND (c.state = 'reaping' OR c.hard_expires_at <= now() OR NOT ${RUNNING_HEAD})
           ORDER BY least(c.idle_expires_at, c.hard_expires_at)
           LIMIT $2
           FOR UPDATE OF c SKIP LOCKED
         ) d
         WHERE s.sandbox_id = d.sandbox_id
         RETURNING s.sandbox_id, s.provider, s.project_id, s.session_key, s.reap_attempts, d.why`,
        [o.owner, o.limit, o.claimMs],
      ),
    destroyed: async (sandboxId, owner) =>
      (
        await db.query(
          'sandbox_reap_destroyed',
          `UPDATE state.sandboxes SET state = 'destroyed', destroyed_at = now(), lock_owner = NULL,
             lock_expires_at = NULL, last_error = NULL, next_attempt_at = NULL
           WHERE sandbox_id = $1 AND state = 'reaping' AND lock_owner = $2
           RETURNING sandbox_id`,
          [sandboxId, owner],
        )
      ).length === 1,
    failed: async (sandboxId, owner, error, backoff) =>
      (
        await db.query<ReapFailure>(
          'sandbox_reap_failed',
          `UPDATE state.sandboxes SET reap_attempts = reap_attempts + 1, last_error = $3,
             lock_owner = NULL, lock_expires_at = NULL,
             next_attempt_at = now() + least($4::double precision * power(2, least(reap_attempts, 30)), $5::double precision)
               * interval '1 millisecond'
           WHERE sandbox_id = $1 AND state = 'reaping' AND lock_owner = $2
           RETURNING reap_attempts, next_attempt_at`,
          [sandboxId, owner, error.slice(0, 2_000), backoff.baseMs, backoff.maxMs],
        )
      )[0],
    countHeld: async () =>
      Number(
        (
          await db.query<{ n: string }>(
            'sandbox_reap_count_held',
            `SELECT count(*) AS n FROM state.sandboxes c
             WHERE c.state = 'active' AND least(c.idle_expires_at, c.hard_expires_at) <= now()
               AND ((c.lock_owner IS NOT NULL AND c.lock_expires_at > now())
                 OR (coalesce(c.hard_expires_at > now(), true) AND ${RUNNING_HEAD}))`,
            [],
          )
        )[0]?.n ?? 0,
      ),
    processesOf: async (sandboxId) =>
      db.query<HeadProcess>(
        'sandbox_reap_processes_of',
        `SELECT pid, proc_start_time FROM state.skill_tasks
         WHERE sandbox_id = $1 AND status = 'running' AND pid IS NOT NULL
           AND proc_start_time IS NOT NULL
         UNION ALL
         SELECT (st->>'pid')::integer, st->>'proc_start_time'
         FROM state.skill_jobs j, jsonb_array_elements(j.steps) st
         WHERE j.sandbox_id = $1 AND j.status = 'running'
           AND st->>'pid' IS NOT NULL AND st->>'proc_start_time' IS NOT NULL`,
        [sandboxId],
      ),
  };
}
