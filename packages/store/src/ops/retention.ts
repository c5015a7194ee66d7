// Retention of the execution log: finished executions older than the configured age are
// deleted with their tool.call and tool.result cards, their execution edge, a stored cancel and
// the Idempotency-Key naming them (keys expire on their own too: idempotency-keys.ts).
// A stored cancel whose call never got an execution row goes on its own, once no copy of the
// call can arrive any more (the caller says when).
// One batch is one statement (its own short transaction) over rows locked with SKIP LOCKED, so
// a writer closing a row or two retention passes running at once never wait on each other.
// Rows of turns still in progress are kept: the turn's conversation is rebuilt from those cards.
import type { Db } from '../core/db.ts';

export interface RetentionBatch {
  executions: number;
  cards: number;
}

export interface RetentionRepo {
  /** Deletes up to `limit` finished executions older than `maxAgeHours`, with their cards. */
  deleteExpiredExecutions(maxAgeHours: number, limit: number): Promise<RetentionBatch>;
  /**
   * Deletes up to `limit` stored cancels older than `olderThanSec` whose call never got an
   * execution row (a cancel of an id nobody published, or of a call that never arrived);
   * returns how many. The others go with their execution.
   */
  deleteOrphanCancels(olderThanSec: number, limit: number): Promise<number>;
}

const UUID = `'^[0-9a-fA-F]{8}-([0-9a-fA-F]{4}-){3}[0-9a-fA-F]{12}$'`;

const DELETE_SQL = `
WITH doomed AS (
  SELECT e.project_id, e.tool_call_id FROM state.tool_executions e
  WHERE e.finished_at < now() - make_interval(secs => $1::float8 * 3600)
    AND e.status NOT IN ('queued', 'awaiting_approval', 'running')
    AND NOT EXISTS (
      SELECT 1 FROM state.turns t
      WHERE e.turn_id ~ ${UUID} AND t.turn_id = (CASE WHEN e.turn_id ~ ${UUID} THEN e.turn_id::uuid END)
        AND t.status IN ('ready', 'running', 'waiting'))
  ORDER BY e.finished_at LIMIT $2
  FOR UPDATE OF e SKIP LOCKED
),
gone AS (
  DELETE FROM state.tool_executions e USING doomed d
  WHERE e.tool_call_id = d.tool_call_id AND e.project_id = d.project_id
  RETURNING e.project_id, e.tool_call_id
),
cards_gone AS (
  DELETE FROM cards c USING gone g
  WHERE c.tool_call_id = g.tool_call_id AND c.project_id = g.project_id
    AND c.kind IN ('tool.call', 'tool.result')
  RETURNING 1
),
edges_gone AS (
  DELETE FROM state.execution_edges x USING gone g
  WHERE x.tool_call_id = g.tool_call_id AND x.project_id = g.project_id
),
cancels_gone AS (
  DELETE FROM state.call_cancels x USING gone g
  WHERE x.project_id = g.project_id AND md5(x.tool_call_id) = md5(g.tool_call_id)
    AND x.tool_call_id = g.tool_call_id
),
-- A key whose call is gone would answer a request sent again with nothing: it goes too.
keys_gone AS (
  DELETE FROM state.idempotency_keys k USING gone g
  WHERE k.project_id = g.project_id AND k.tool_call_id = g.tool_call_id
)
SELECT (SELECT count(*) FROM gone) AS executions, (SELECT count(*) FROM cards_gone) AS cards`;

const ORPHAN_CANCELS_SQL = `
WITH doomed AS (
  SELECT c.ctid AS row FROM state.call_cancels c
  WHERE c.created_at < now() - make_interval(secs => $1::float8)
    AND NOT EXISTS (
      SELECT 1 FROM state.tool_executions e
      WHERE e.project_id = c.project_id AND md5(e.tool_call_id) = md5(c.tool_call_id)
        AND e.tool_call_id = c.tool_call_id)
  ORDER BY c.created_at LIMIT $2
  FOR UPDATE OF c SKIP LOCKED
)
DELETE FROM state.call_cancels c USING doomed d WHERE c.ctid = d.row RETURNING 1`;

export function createRetentionRepo(db: Db): RetentionRepo {
  return {
    deleteExpiredExecutions: async (maxAgeHours, limit) => {
      const [row] = await db.query<{ executions: string; cards: string }>(
        'retention_delete_executions',
        DELETE_SQL,
        [maxAgeHours, limit],
      );
      return { executions: Number(row?.executions ?? 0), cards: Number(row?.cards ?? 0) };
    },
    deleteOrphanCancels: async (olderThanSec, limit) =>
      (await db.query('retention_delete_orphan_cancels', ORPHAN_CANCELS_SQL, [olderThanSec, limit]))
        .length,
  };
}
