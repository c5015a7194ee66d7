// Writing tool results: the card, the closed execution row, the execution edge and (when an
// agent waits) the answer to its turn, in one statement for a whole batch of calls (see
// batcher.ts): the call is answered and its turn readied by the commit that writes the card, so
// no later write of the agent worker stands between a result and the turn's next step. The
// card insert is `ON CONFLICT DO NOTHING` on (project_id, md5(tool_call_id)): whoever writes
// second gets the first card back, so a redelivered call re-emits the same card id and writes
// nothing new.
// An agent reserves each tool_call_id under the tool it calls (state.turn_calls) before it
// publishes the call. A result filed for that id under another tool name (a call published
// under another target by anyone who learned the id) is refused: no card, no answer, and the
// agent's own call still gets its slot.
import { v7 as uuidv7 } from 'uuid';
import {
  ToolError,
  type CallContext,
  type ResultStatus,
  type ToolResultContent,
} from '@toolmesh/protocol';
import { createBatcher } from '../core/batcher.ts';
import type { Db } from '../core/db.ts';
import { isRetryablePgError } from '../core/errors.ts';
import { CREDENTIAL_OF, TASK_OF_TURN } from './executions.ts';

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
  /** The call's cost estimate, kept on the execution row for the metrics. */
  cost?: { amount: number; currency: string } | undefined;
  agentId?: string | undefined;
  turnId?: string | undefined;
  turnEpoch?: number | undefined;
  /** The call's arguments for the execution log, already capped (see cappedArguments). */
  arguments?: unknown;
  context?: CallContext | undefined;
  /** As the publisher's CG-Credential-Id named it (see CREDENTIAL_OF). */
  credentialId?: string | undefined;
  /**
   * File the call `canceled` instead when a cancel of it was stored (recordCancel) before: for
   * a call that took no lease, so met no tombstone (a pure tool's).
   */
  checkCancel?: boolean | undefined;
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
  /** Stores a cancel of a call (the durable cancel consumer does, beside its tombstone). */
  recordCancel(projectId: string, toolCallId: string, reason: string): Promise<void>;
}

const COLUMNS = [
  'card_id uuid',
  'project_id text',
  'tool_call_id text',
  'author text',
  'content jsonb',
  'metadata jsonb',
  'channel text',
  'tool_name text',
  'target text',
  'agent_id text',
  'status text',
  'error_code text',
  'instance_id text',
  'duration_ms float8',
  'turn_id text',
  'turn_epoch int',
  'inbox_id uuid',
  'cost float8',
  'cost_currency text',
  'arguments jsonb',
  'session_id text',
  'context_metadata jsonb',
  'credential_id text',
  'check_cancel boolean',
] as const;

const NAMES = COLUMNS.map((c) => c.split(' ')[0]!);

/** The columns of a row as given, but for those a stored cancel replaces. */
const KEPT = NAMES.filter((n) => !['content', 'status', 'error_code', 'check_cancel'].includes(n))
  .map((n) => `r.${n}`)
  .join(', ');

// Each row's lookups (a stored cancel, an agent's call of the same id, an existing card) are
// LATERAL subqueries with LIMIT 1: always an index probe per row. As plain joins the planner,
// estimating a batch of ten rows against small tables, hashed the whole table instead (md5 of
// every turn_calls row per batch), and kept that plan cached as the tables grew.
// A row asking for it (a pure tool's call, which took no lease and so met no tombstone) is filed
// `canceled` instead of its result when a cancel of the call was stored first.
const RECORD_SQL = `
WITH raw AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb) AS t(${COLUMNS.join(', ')})
),
input AS (
  SELECT ${KEPT},
    CASE WHEN cc.reason IS NULL THEN r.content
         ELSE jsonb_build_object('status', 'canceled', 'duration_ms', r.duration_ms,
                'error', jsonb_build_object('code', 'canceled', 'message', cc.reason)) END AS content,
    CASE WHEN cc.reason IS NULL THEN r.status ELSE 'canceled' END AS status,
    CASE WHEN cc.reason IS NULL THEN r.error_code ELSE 'canceled' END AS error_code,
    cc.reason IS NOT NULL AS canceled
  FROM raw r LEFT JOIN LATERAL (
    SELECT cc.reason FROM state.call_cancels cc
    WHERE r.check_cancel AND cc.project_id = r.project_id
      AND md5(cc.tool_call_id) = md5(r.tool_call_id) AND cc.tool_call_id = r.tool_call_id
    LIMIT 1) cc ON true
),
taken AS (
  SELECT t.project_id, t.tool_call_id FROM input t
  CROSS JOIN LATERAL (
    SELECT 1 FROM state.turn_calls tc
    WHERE tc.project_id = t.project_id AND md5(tc.tool_call_id) = md5(t.tool_call_id)
      AND tc.tool_call_id = t.tool_call_id AND tc.tool_name <> t.tool_name
    LIMIT 1) tc
),
ins AS (
  INSERT INTO cards (card_id, project_id, kind, tool_call_id, author, content, metadata)
  SELECT card_id, project_id, 'tool.result', tool_call_id, author, content, metadata FROM input t
  WHERE NOT EXISTS (SELECT 1 FROM taken k
                    WHERE k.project_id = t.project_id AND k.tool_call_id = t.tool_call_id)
  ON CONFLICT (project_id, md5(tool_call_id)) WHERE kind = 'tool.result' DO NOTHING
  RETURNING card_id, project_id, tool_call_id, created_at
),
card AS (
  SELECT i.project_id, i.tool_call_id, i.card_id, i.created_at,
         CASE WHEN t.canceled THEN t.content END AS content, true AS inserted
  FROM ins i JOIN input t ON t.project_id = i.project_id AND t.tool_call_id = i.tool_call_id
  UNION ALL
  SELECT c.project_id, c.tool_call_id, c.card_id, c.created_at, c.content, false
  FROM input t CROSS JOIN LATERAL (
    SELECT c.card_id, c.created_at, c.content, c.project_id, c.tool_call_id FROM cards c
    WHERE c.project_id = t.project_id AND md5(c.tool_call_id) = md5(t.tool_call_id)
      AND c.tool_call_id = t.tool_call_id AND c.kind = 'tool.result'
    LIMIT 1) c
  WHERE NOT EXISTS (SELECT 1 FROM ins WHERE ins.project_id = t.project_id AND ins.tool_call_id = t.tool_call_id)
    AND NOT EXISTS (SELECT 1 FROM taken k
                    WHERE k.project_id = t.project_id AND k.tool_call_id = t.tool_call_id)
),
exec AS (
  INSERT INTO state.tool_executions
    (project_id, tool_call_id, channel, tool_name, target, agent_id, status, error_code,
     instance_id, card_id, started_at, finished_at, duration_ms, cost, cost_currency,
     arguments, turn_id, task_id, session_id, context_metadata, credential_id)
  SELECT t.project_id, t.tool_call_id, t.channel, t.tool_name, t.target, t.agent_id, t.status,
         t.error_code, t.instance_id, ins.card_id,
         now() - make_interval(secs => t.duration_ms / 1000), now(), t.duration_ms,
         t.cost, t.cost_currency, t.arguments, t.turn_id, ${TASK_OF_TURN('t.turn_id')},
         t.session_id, t.context_metadata, ${CREDENTIAL_OF('t.project_id', 't.credential_id')}
  FROM input t JOIN ins ON ins.project_id = t.project_id AND ins.tool_call_id = t.tool_call_id
  ON CONFLICT (project_id, md5(tool_call_id)) DO UPDATE
    SET status = EXCLUDED.status, error_code = EXCLUDED.error_code, card_id = EXCLUDED.card_id,
        instance_id = EXCLUDED.instance_id, finished_at = EXCLUDED.finished_at,
        duration_ms = EXCLUDED.duration_ms, cost = EXCLUDED.cost,
        cost_currency = EXCLUDED.cost_currency,
        arguments = coalesce(EXCLUDED.arguments, state.tool_executions.arguments),
        turn_id = coalesce(EXCLUDED.turn_id, state.tool_executions.turn_id),
        task_id = coalesce(EXCLUDED.task_id, state.tool_executions.task_id),
        -- The first context recorded stays: a queued row's is the api's own.
        session_id = coalesce(state.tool_executions.session_id, EXCLUDED.session_id),
        context_metadata = coalesce(state.tool_executions.context_metadata,
                                    EXCLUDED.context_metadata),
        credential_id = coalesce(state.tool_executions.credential_id, EXCLUDED.credential_id)
),
edge AS (
  INSERT INTO state.execution_edges (project_id, agent_id, turn_id, turn_epoch, tool_call_id)
  SELECT project_id, agent_id, turn_id, coalesce(turn_epoch, 0), tool_call_id FROM input
  WHERE agent_id IS NOT NULL AND turn_id IS NOT NULL
  ON CONFLICT (project_id, md5(tool_call_id)) DO NOTHING
),
-- A new result of an agent's call answers it in the same commit (migration 0044), one turn after
-- another in the order of their ids: two batches lock the turns they share in the same order.
-- A card written before (a duplicate) was applied by the statement that wrote it.
applied AS MATERIALIZED (
  SELECT t.project_id, t.tool_call_id, t.agent_id, t.turn_id, t.turn_epoch, t.status, ins.card_id,
         state.apply_result(t.project_id, t.tool_call_id, ins.card_id, t.turn_epoch) AS ignored
  FROM ins JOIN input t ON t.project_id = ins.project_id AND t.tool_call_id = ins.tool_call_id
  LEFT JOIN LATERAL (
    SELECT tc.turn_id FROM state.turn_calls tc
    WHERE tc.project_id = t.project_id AND md5(tc.tool_call_id) = md5(t.tool_call_id)
      AND tc.tool_call_id = t.tool_call_id
    LIMIT 1) tc ON true
  WHERE t.agent_id IS NOT NULL
  ORDER BY tc.turn_id, t.tool_call_id
),
-- One it could not apply goes to the agent's inbox, whose next apply reports why.
inbox AS (
  INSERT INTO state.agent_inbox (inbox_id, project_id, agent_id, message_type, correlation_id, payload)
  SELECT t.inbox_id, a.project_id, a.agent_id, 'tool_result', a.tool_call_id,
         jsonb_build_object('card_id', a.card_id, 'status', a.status, 'turn_id', a.turn_id,
                            'turn_epoch', a.turn_epoch)
  FROM applied a JOIN input t ON t.project_id = a.project_id AND t.tool_call_id = a.tool_call_id
  WHERE a.ignored IS NOT NULL
  ON CONFLICT (project_id, message_type, md5(correlation_id)) DO NOTHING
)
SELECT project_id, tool_call_id, card_id, created_at, content, inserted, false AS taken FROM card
UNION ALL
SELECT project_id, tool_call_id, NULL, NULL, NULL, false, true FROM taken`;

const EXISTING_SQL = `SELECT project_id, tool_call_id, card_id, created_at, content, false AS inserted
  FROM cards WHERE project_id = $1 AND md5(tool_call_id) = md5($2) AND tool_call_id = $2
   AND kind = 'tool.result'`;

interface Row {
  project_id: string;
  tool_call_id: string;
  card_id: string;
  created_at: Date;
  /** Null for a card this statement inserted. */
  content: ToolResultContent | null;
  inserted: boolean;
  /** The id is an agent's call to another tool: nothing was written. */
  taken?: boolean;
}

/**
 * The batch as one JSON array of rows keyed by COLUMNS, which the statement reads with
 * jsonb_to_recordset. One parameter whose row count the planner estimates alike for any batch:
 * with a column array per field, each execution's own plan (which sees the arrays' lengths)
 * looked cheaper than the cached generic one, so the statement was planned again every time
 * (measured: 0.6 ms of planning beside 0.56 ms of execution for a one-row batch).
 */
function toRows(items: RecordToolResult[]): string {
  return JSON.stringify(
    items.map((r) => {
      const c = r.content;
      const values: unknown[] = [
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
        // The agent's inbox row, used only if its turn cannot take the result (see above).
        r.agentId !== undefined ? uuidv7() : null,
        r.cost?.amount ?? null,
        r.cost?.currency ?? null,
        r.arguments ?? null,
        r.context?.session_id ?? null,
        r.context?.metadata ?? null,
        r.credentialId ?? null,
        r.checkCancel === true,
      ];
      return Object.fromEntries(values.map((v, i) => [NAMES[i]!, v]));
    }),
  );
}

/** The refusal of a result filed under another tool than the one an agent reserved the id for. */
function toolCallIdTaken(r: RecordToolResult): ToolError {
  return new ToolError(
    `tool_call_id ${r.toolCallId} belongs to an agent's call of another tool; a result of ${r.toolName} cannot be filed under it`,
    {
      code: 'tool_call_id_taken',
      details: { tool_call_id: r.toolCallId, tool_name: r.toolName },
    },
  );
}

const keyOf = (project: string, toolCallId: string) => `${project}\u0000${toolCallId}`;

export interface ResultsRepoOptions {
  /** Most results written by one statement. */
  maxBatch?: number;
  /** Statements in flight at once (each holds a pool connection). */
  maxInFlight?: number;
}

export function createResultsRepo(db: Db, opts: ResultsRepoOptions = {}): ResultsRepo {
  async function writeBatch(items: RecordToolResult[]): Promise<(RecordedResult | Error)[]> {
    const rows = await db.query<Row>('results_record', RECORD_SQL, [toRows(items)]);
    const byKey = new Map(rows.map((row) => [keyOf(row.project_id, row.tool_call_id), row]));
    return Promise.all(
      items.map(async (r): Promise<RecordedResult | Error> => {
        // A concurrent writer may have committed after this statement's snapshot was taken:
        // the insert then did nothing and the snapshot cannot see the winner, so read it afresh.
        const row =
          byKey.get(keyOf(r.projectId, r.toolCallId)) ??
          (await db.query<Row>('results_existing', EXISTING_SQL, [r.projectId, r.toolCallId]))[0];
        if (row?.taken === true) return toolCallIdTaken(r);
        if (!row) return new Error(`tool result for ${r.toolCallId} neither inserted nor found`);
        // A new card's content is what was passed in: it is not sent back, only an existing one.
        return {
          cardId: row.card_id,
          createdAt: row.created_at,
          content: row.content ?? r.content,
          inserted: row.inserted,
        };
      }),
    );
  }

  const batcher = createBatcher<RecordToolResult, RecordedResult>({
    maxBatch: opts.maxBatch ?? 256,
    maxInFlight: opts.maxInFlight ?? 2,
    key: (r) => keyOf(r.projectId, r.toolCallId),
    run: async (items) => {
      try {
        return await writeBatch(items);
      } catch (err) {
        // Postgres refused the batch itself (one row it cannot store, say): write each item on
        // its own so only that one fails. Unreachable Postgres fails them all, to be retried.
        if (items.length === 1 || isRetryablePgError((err as { cause?: unknown }).cause ?? err))
          throw err;
        return Promise.all(
          items.map((r) =>
            writeBatch([r]).then(
              (o) => o[0]!,
              (e: unknown) => e as Error,
            ),
          ),
        );
      }
    },
  });

  return {
    record: (r) => batcher.submit(r),
    recordCancel: async (projectId, toolCallId, reason) => {
      await db.query(
        'results_record_cancel',
        `INSERT INTO state.call_cancels (project_id, tool_call_id, reason) VALUES ($1, $2, $3)
         ON CONFLICT (project_id, md5(tool_call_id)) DO NOTHING`,
        [projectId, toolCallId, reason],
      );
    },
  };
}
