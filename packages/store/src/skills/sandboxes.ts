// Sandbox sessions (state.sandboxes): which live sandbox serves a project's session key, who
// holds it now (the lock: a tool call id and an expiry) and when it may be reaped (idle and hard
// expiry). Every decision is one statement, so two instances racing for a session meet in
// Postgres: the lock is taken by a conditional UPDATE, the first sandbox of a session by an
// INSERT against the partial unique index sandboxes_session_once.
import type { Db } from '../core/db.ts';

export type SandboxProviderKind = 'local' | 'e2b';
export type SandboxState = 'active' | 'reaping' | 'destroyed' | 'error';

/** A row as the api lists it: every column, expiry, lock and reaping state included. */
export type SandboxListing = SandboxRecord;

export interface SandboxRecord {
  sandbox_id: string;
  provider: SandboxProviderKind;
  project_id: string;
  agent_id: string | null;
  session_key: string;
  state: SandboxState;
  created_at: Date;
  last_used_at: Date;
  idle_expires_at: Date | null;
  hard_expires_at: Date | null;
  lock_owner: string | null;
  lock_expires_at: Date | null;
  reap_attempts: number;
  last_error: string | null;
  next_attempt_at: Date | null;
  destroyed_at: Date | null;
}

/** What a try for a session's lock found. */
export type LockAttempt =
  /** No active sandbox serves the key: the caller may create one. */
  | { readonly outcome: 'none' }
  /** Locked for the caller; `tookOverFrom` names a holder whose lock had expired. */
  | {
      readonly outcome: 'locked';
      readonly record: SandboxRecord;
      readonly tookOverFrom: string | null;
      /** Past its hard expiry: not to be used (see `retire`). */
      readonly hardExpired: boolean;
    }
  /** Another call holds a live lock. */
  | { readonly outcome: 'busy'; readonly owner: string; readonly lockExpiresAt: Date };

export interface SessionLock {
  projectId: string;
  sessionKey: string;
  /** The tool call taking the lock. */
  owner: string;
  /** How long the lock holds unless released (the call's time left plus a margin). */
  lockMs: number;
}

export interface NewSandbox extends SessionLock {
  sandboxId: string;
  provider: SandboxProviderKind;
  agentId: string | null;
  idleTtlSec: number;
  hardTtlSec: number;
}

export interface SandboxesRepo {
  /** Takes the lock of the session's active sandbox, or says why not. */
  lock(l: SessionLock): Promise<LockAttempt>;
  /**
   * Records a new session sandbox, locked by its creator; undefined when another sandbox won the
   * race for the key (the caller destroys its own and locks the winner's).
   */
  claim(s: NewSandbox): Promise<SandboxRecord | undefined>;
  /**
   * Ends a hold: clears the lock (when `owner` still holds it) and starts the idle TTL again from
   * now (never past the hard expiry). False when the lock was no longer the owner's.
   */
  release(sandboxId: string, owner: string, idleTtlSec: number): Promise<boolean>;
  /** Marks the sandbox used now (a background task ended in it) without touching the lock. */
  touch(sandboxId: string, idleTtlSec: number): Promise<void>;
  /**
   * Hands a sandbox the session may not use any more (past its hard expiry, of another provider)
   * to the reaper: `reaping` with a lapsed claim, so the next pass of any reaper takes it. With an
   * owner, only while that call holds the lock.
   */
  retire(sandboxId: string, owner?: string): Promise<void>;
  /** Marks a sandbox gone (destroyed by its own call, or its provider no longer knows it). */
  markDestroyed(sandboxId: string): Promise<void>;
  get(sandboxId: string): Promise<SandboxRecord | undefined>;
  /** A project's sandboxes, most recently used first, with their expiry and lock. */
  listByProject(
    projectId: string,
    filter: { state?: SandboxRecord['state'] | undefined; limit: number },
  ): Promise<SandboxListing[]>;
}

export const SANDBOX_COLUMNS = `sandbox_id, provider, project_id, agent_id, session_key, state,
  created_at, last_used_at, idle_expires_at, hard_expires_at, lock_owner, lock_expires_at,
  reap_attempts, last_error, next_attempt_at, destroyed_at`;

const prefixed = (alias: string) =>
  SANDBOX_COLUMNS.split(',')
    .map((c) => `${alias}.${c.trim()}`)
    .join(', ');

interface LockRow extends SandboxRecord {
  prev_owner: string | null;
  prev_expires_at: Date | null;
  acquired: boolean;
  hard_expired: boolean;
}

export function createSandboxesRepo(db: Db): SandboxesRepo {
  return {
    lock: async (l) => {
      // `cur` locks the row for the statement, so the holder read is the holder replaced; the
      // UPDATE only fires when the lock is free, ours already, or lapsed.
      const rows = await db.query<LockRow>(
        'sandboxes_lock',
        `WITH cur AS (
           SELECT sandbox_id, lock_owner, lock_expires_at FROM state.sandboxes
           WHERE project_id = $1 AND md5(session_key) = md5($2) AND session_key = $2
             AND state = 'active'
           FOR UPDATE
         ), took AS (
           UPDATE state.sandboxes s
           SET lock_owner = $3, lock_expires_at = now() + $4::double precision * interval '1 millisecond',
               last_used_at = now()
           FROM cur
           WHERE s.sandbox_id = cur.sandbox_id
             AND (cur.lock_owner IS NULL OR cur.lock_owner = $3 OR cur.lock_expires_at <= now())
           RETURNING ${prefixed('s')}
         )
         SELECT ${prefixed('took')}, cur.lock_owner AS prev_owner,
           cur.lock_expires_at AS prev_expires_at, took.sandbox_id IS NOT NULL AS acquired,
           coalesce(took.hard_expires_at <= now(), false) AS hard_expired
         FROM cur LEFT JOIN took ON took.sandbox_id = cur.sandbox_id`,
        [l.projectId, l.sessionKey, l.owner, l.lockMs],
      );
      const row = rows[0];
      if (!row) return { outcome: 'none' };
      if (!row.acquired) {
        return {
          outcome: 'busy',
          owner: row.prev_owner ?? '',
          lockExpiresAt: row.prev_expires_at ?? new Date(),
        };
      }
      const { prev_owner: prev, prev_expires_at: _e, acquired: _a, hard_expired, ...record } = row;
      return {
        outcome: 'locked',
        record,
        tookOverFrom: prev !== null && prev !== l.owner ? prev : null,
        hardExpired: hard_expired,
      };
    },
    claim: async (s) =>
      (
        await db.query<SandboxRecord>(
          'sandboxes_claim',
          `INSERT INTO state.sandboxes (sandbox_id, provider, project_id, agent_id, session_key,
             lock_owner, lock_expires_at, idle_expires_at, hard_expires_at)
           VALUES ($1, $2, $3, $4, $5, $6, now() + $7::double precision * interval '1 millisecond',
             now() + least($8::double precision, $9::double precision) * interval '1 second', now() + $9::double precision * interval '1 second')
           ON CONFLICT (project_id, md5(session_key)) WHERE state = 'active' DO NOTHING
           RETURNING ${SANDBOX_COLUMNS}`,
          [
            s.sandboxId,
            s.provider,
            s.projectId,
            s.agentId,
            s.sessionKey,
            s.owner,
            s.lockMs,
            s.idleTtlSec,
            s.hardTtlSec,
          ],
        )
      )[0],
    release: async (sandboxId, owner, idleTtlSec) =>
      (
        await db.query(
          'sandboxes_release',
          `UPDATE state.sandboxes
           SET lock_owner = NULL, lock_expires_at = NULL, last_used_at = now(),
               idle_expires_at = least(now() + $3::double precision * interval '1 second', hard_expires_at)
           WHERE sandbox_id = $1 AND lock_owner = $2 AND state = 'active'
           RETURNING sandbox_id`,
          [sandboxId, owner, idleTtlSec],
        )
      ).length === 1,
    touch: async (sandboxId, idleTtlSec) => {
      await db.query(
        'sandboxes_touch',
        `UPDATE state.sandboxes
         SET last_used_at = now(),
             idle_expires_at = least(now() + $2::double precision * interval '1 second', hard_expires_at)
         WHERE sandbox_id = $1 AND state = 'active'`,
        [sandboxId, idleTtlSec],
      );
    },
    retire: async (sandboxId, owner) => {
      await db.query(
        'sandboxes_retire',
        `UPDATE state.sandboxes SET state = 'reaping', lock_owner = NULL, lock_expires_at = NULL,
           next_attempt_at = NULL, idle_expires_at = now()
         WHERE sandbox_id = $1 AND state = 'active' AND ($2::text IS NULL OR lock_owner = $2)`,
        [sandboxId, owner ?? null],
      );
    },
    markDestroyed: async (sandboxId) => {
      await db.query(
        'sandboxes_mark_destroyed',
        `UPDATE state.sandboxes SET state = 'destroyed', destroyed_at = now(),
           lock_owner = NULL, lock_expires_at = NULL
         WHERE sandbox_id = $1 AND state <> 'destroyed'`,
        [sandboxId],
      );
    },
    get: async (sandboxId) =>
      (
        await db.query<SandboxRecord>(
          'sandboxes_get',
          `SELECT ${SANDBOX_COLUMNS} FROM state.sandboxes WHERE sandbox_id = $1`,
          [sandboxId],
        )
      )[0],
    listByProject: (projectId, filter) =>
      db.query<SandboxListing>(
        'sandboxes_list_by_project',
        `SELECT ${SANDBOX_COLUMNS}
         FROM state.sandboxes
         WHERE project_id = $1 AND ($2::text IS NULL OR state = $2)
         ORDER BY last_used_at DESC, sandbox_id
         LIMIT $3`,
        [projectId, filter.state ?? null, filter.limit],
      ),
  };
}
