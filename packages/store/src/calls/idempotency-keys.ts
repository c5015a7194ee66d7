// Idempotency-Key records of POST /executions (state.idempotency_keys, migration 0039), after
// the IETF draft "The Idempotency-Key HTTP Header Field": a key names one call of its project;
// sent again with the same request it is answered from that call, with another request it is
// refused, and while a request holding it is in progress a second one is refused too. The lock
// is a time (locked_until), not a session, so a request whose api instance died frees its key
// by itself. Keys are per project: the primary key starts with the project.
import type { Db } from '../core/db.ts';

export type KeyClaim =
  /** The key is this request's until release: a new record (`fresh`) or a request sent again. */
  | { kind: 'claimed'; toolCallId: string; fresh: boolean }
  /** The key was first sent with another request (another fingerprint). */
  | { kind: 'mismatch' }
  /** A request holding the key is still in progress. */
  | { kind: 'in_progress' };

export interface ClaimKey {
  projectId: string;
  key: string;
  fingerprint: string;
  /** The call a new record names (the request's own tool_call_id, or a fresh one). */
  toolCallId: string;
  /** How long the claim holds at most: the request's whole wait and then some. */
  lockMs: number;
  /** A record older than this is forgotten: the key starts a new call. */
  maxAgeHours: number;
}

export interface IdempotencyKeysRepo {
  claim(c: ClaimKey): Promise<KeyClaim>;
  /** Ends the request holding the key: the key now answers from its call. */
  release(projectId: string, key: string, toolCallId: string): Promise<void>;
  /** Drops the record: its call was never stored, so the key may start one afresh. */
  forget(projectId: string, key: string, toolCallId: string): Promise<void>;
  /** Deletes up to `limit` records older than `maxAgeHours`; returns how many. */
  deleteExpired(maxAgeHours: number, limit: number): Promise<number>;
}

const AGE = (hours: string) => `make_interval(secs => ${hours}::float8 * 3600)`;
const LOCK = (ms: string) => `now() + make_interval(secs => ${ms}::float8 / 1000)`;

export function createIdempotencyKeysRepo(db: Db): IdempotencyKeysRepo {
  const claimOnce = async (c: ClaimKey): Promise<KeyClaim | undefined> => {
    // A new key, or one whose record has expired, is taken over with this request.
    const [created] = await db.query<{ tool_call_id: string }>(
      'idempotency_keys_create',
      `INSERT INTO state.idempotency_keys
         (project_id, idem_key, fingerprint, tool_call_id, locked_until)
       VALUES ($1, $2, $3, $4, ${LOCK('$5')})
       ON CONFLICT (project_id, idem_key) DO UPDATE
         SET fingerprint = EXCLUDED.fingerprint, tool_call_id = EXCLUDED.tool_call_id,
             locked_until = EXCLUDED.locked_until, created_at = now()
         WHERE state.idempotency_keys.created_at < now() - ${AGE('$6')}
       RETURNING tool_call_id`,
      [c.projectId, c.key, c.fingerprint, c.toolCallId, c.lockMs, c.maxAgeHours],
    );
    if (created) return { kind: 'claimed', toolCallId: created.tool_call_id, fresh: true };
    // The same request sent again, once nobody holds the key.
    const [again] = await db.query<{ tool_call_id: string }>(
      'idempotency_keys_reclaim',
      `UPDATE state.idempotency_keys SET locked_until = ${LOCK('$4')}
       WHERE project_id = $1 AND idem_key = $2 AND fingerprint = $3
         AND (locked_until IS NULL OR locked_until <= now())
       RETURNING tool_call_id`,
      [c.projectId, c.key, c.fingerprint, c.lockMs],
    );
    if (again) return { kind: 'claimed', toolCallId: again.tool_call_id, fresh: false };
    const [held] = await db.query<{ fingerprint: string }>(
      'idempotency_keys_get',
      'SELECT fingerprint FROM state.idempotency_keys WHERE project_id = $1 AND idem_key = $2',
      [c.projectId, c.key],
    );
    if (!held) return undefined; // forgotten meanwhile: try again
    return held.fingerprint === c.fingerprint ? { kind: 'in_progress' } : { kind: 'mismatch' };
  };

  return {
    claim: async (c) => {
      // Each statement is atomic on its own; a record deleted between them (forgotten by the
      // request that held it) sends the claim round again. Three rounds settle any such race.
      for (let round = 0; round < 3; round++) {
        const r = await claimOnce(c);
        if (r) return r;
      }
      return { kind: 'in_progress' };
    },
    release: async (projectId, key, toolCallId) => {
      await db.query(
        'idempotency_keys_release',
        `UPDATE state.idempotency_keys SET locked_until = NULL
         WHERE project_id = $1 AND idem_key = $2 AND tool_call_id = $3`,
        [projectId, key, toolCallId],
      );
    },
    forget: async (projectId, key, toolCallId) => {
      await db.query(
        'idempotency_keys_forget',
        `DELETE FROM state.idempotency_keys
         WHERE project_id = $1 AND idem_key = $2 AND tool_call_id = $3`,
        [projectId, key, toolCallId],
      );
    },
    deleteExpired: async (maxAgeHours, limit) =>
      (
        await db.query(
          'idempotency_keys_delete_expired',
          `WITH doomed AS (
             SELECT ctid AS row FROM state.idempotency_keys
             WHERE created_at < now() - ${AGE('$1')}
             ORDER BY created_at LIMIT $2
             FOR UPDATE SKIP LOCKED)
           DELETE FROM state.idempotency_keys k USING doomed d WHERE k.ctid = d.row RETURNING 1`,
          [maxAgeHours, limit],
        )
      ).length,
  };
}
