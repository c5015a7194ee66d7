// Writing a tool result: the card, the closed execution row, the execution edge and (when an
// agent waits) the inbox row, in one statement and one round trip. The card insert is
// `ON CONFLICT DO NOTHING` on (project_id, md5(tool_call_id)): whoever writes second gets the
// first card back, so a redelivered call re-emits the same card id and writes nothing new.
import { v7 as uuidv7 } from 'uuid';
import type { ResultStatus, ToolResultContent } from '@toolmesh/protocol';
import type { Db } from './db.ts';

export interface RecordToolResult {
  projectId: string;
  channel: string;
  toolCallId: string;
  toolName: string;
  target: string;
  author: string;
  instanceId: string;
  content: ToolResultContent;
  metadata?: Record<string, unknown>;
  agentId?: string | undefined;
  turnId?: string | undefined;
  turnEpoch?: number | undefined;
}

export interface RecordedResult {
  cardId: string;
  createdAt: Date;
  content: ToolResultContent;
  /** False when the card already existed: nothing new was written. */
  inserted: boolean;
}

export interface ResultsRepo {
  record(r: RecordToolResult): Promise<RecordedResult>;
}

const RECORD_SQL = `
WITH ins AS (
  INSERT INTO cards (card_id, project_id, kind, tool_call_id, author, content, metadata)
  VALUES ($1, $2, 'tool.result', $3, $4, $5, $6)
  ON CONFLICT (project_id, md5(tool_call_id)) WHERE kind = 'tool.result' DO NOTHING
  RETURNING card_id, created_at, content
),
card AS (
  SELECT card_id, created_at, content, true AS inserted FROM ins
  UNION ALL
  SELECT card_id, created_at, content, false FROM cards
  WHERE tool_call_id = $3 AND project_id = $2 AND kind = 'tool.result' AND NOT EXISTS (SELECT 1 FROM ins)
),
exec AS (
  INSERT INTO state.tool_executions AS t
    (project_id, tool_call_id, channel, tool_name, target, agent_id, status, error_code,
     instance_id, card_id, started_at, finished_at, duration_ms)
  SELECT $2, $3, $7, $8, $9, $10, $11, $12, $13, ins.card_id,
         now() - make_interval(secs => $14::double precision / 1000), now(), $14
  FROM ins
  ON CONFLICT (project_id, md5(tool_call_id)) DO UPDATE
    SET status = EXCLUDED.status, error_code = EXCLUDED.error_code, card_id = EXCLUDED.card_id,
        instance_id = EXCLUDED.instance_id, finished_at = EXCLUDED.finished_at,
        duration_ms = EXCLUDED.duration_ms
),
edge AS (
  INSERT INTO state.execution_edges (project_id, agent_id, turn_id, turn_epoch, tool_call_id)
  SELECT $2, $10, $15, coalesce($16, 0), $3 WHERE $10::text IS NOT NULL AND $15::text IS NOT NULL
  ON CONFLICT (project_id, md5(tool_call_id)) DO NOTHING
),
inbox AS (
  INSERT INTO state.agent_inbox (inbox_id, project_id, agent_id, message_type, correlation_id, payload)
  SELECT $17, $2, $10, 'tool_result', $3,
         jsonb_build_object('card_id', card.card_id, 'status', $11::text, 'turn_id', $15::text, 'turn_epoch', $16::int)
  FROM card WHERE $10::text IS NOT NULL
  ON CONFLICT (project_id, message_type, md5(correlation_id)) DO NOTHING
)
SELECT card_id, created_at, CASE WHEN inserted THEN NULL ELSE content END AS content, inserted FROM card`;

const EXISTING_SQL = `SELECT card_id, created_at, content, false AS inserted FROM cards
  WHERE tool_call_id = $2 AND project_id = $1 AND kind = 'tool.result'`;

interface Row {
  card_id: string;
  created_at: Date;
  /** Null for a card this statement inserted. */
  content: ToolResultContent | null;
  inserted: boolean;
}

export function createResultsRepo(db: Db): ResultsRepo {
  return {
    record: async (r) => {
      const c = r.content;
      const rows = await db.query<Row>('results_record', RECORD_SQL, [
        uuidv7(),
        r.projectId,
        r.toolCallId,
        r.author,
        c,
        r.metadata ?? {},
        r.channel,
        r.toolName,
        r.target,
        r.agentId ?? null,
        c.status satisfies ResultStatus,
        c.error?.code ?? null,
        r.instanceId,
        c.duration_ms,
        r.turnId ?? null,
        r.turnEpoch ?? null,
        uuidv7(),
      ]);
      // A concurrent writer may have committed after this statement's snapshot was taken: the
      // insert then did nothing and the snapshot cannot see the winner, so read it afresh.
      const row =
        rows[0] ??
        (await db.query<Row>('results_existing', EXISTING_SQL, [r.projectId, r.toolCallId]))[0];
      if (!row) throw new Error(`tool result for ${r.toolCallId} neither inserted nor found`);
      // A new card's content is what was passed in: it is not sent back, only an existing one.
      return {
        cardId: row.card_id,
        createdAt: row.created_at,
        content: row.content ?? c,
        inserted: row.inserted,
      };
    },
  };
}
