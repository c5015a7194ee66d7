// History and metrics over the tool execution log. History pages by keyset on
// (started_at, tool_call_id), newest first, so a page costs the same however deep it is; the
// cursor carries started_at as Postgres text because a JS Date would drop its microseconds and
// skip or repeat rows that share a millisecond. Category filters join the tool registry.
import type { Db } from '../core/db.ts';
import type { Execution, ExecutionStatus } from './execution-record.ts';

export interface ExecutionFilter {
  tool?: string | undefined;
  /** The tool's category in resource.tools; rows of tools no longer registered never match. */
  category?: string | undefined;
  status?: ExecutionStatus | undefined;
  channel?: string | undefined;
  /** Inclusive lower bound on started_at. */
  from?: Date | undefined;
  /** Exclusive upper bound on started_at. */
  to?: Date | undefined;
  agent?: string | undefined;
  /** The agent task the call was made for. */
  task?: string | undefined;
  /** The agent turn the call was made in. */
  turn?: string | undefined;
  /** The caller's context session id. */
  session?: string | undefined;
  /** Started by this API key: over HTTP, or as a call of a task the key started. */
  key?: string | undefined;
}

/** Where a page starts: strictly after this row in (started_at DESC, tool_call_id DESC). */
export interface HistoryKey {
  startedAt: string;
  toolCallId: string;
}

export interface HistoryRow extends Execution {
  category: string | null;
  /** started_at at full precision, for the next page's key. */
  sort_started_at: string;
}

export interface HistorySummary {
  total: number;
  avg_duration_ms: number | null;
  by_status: Record<ExecutionStatus, number>;
}

export interface MostUsedTool {
  tool_name: string;
  count: number;
  succeeded: number;
  /** Finished calls: succeeded, failed, timeout or canceled. */
  finished: number;
  avg_duration_ms: number | null;
}

/** Summed cost estimates of one currency, over a tool or the whole project. */
export interface CostTotal {
  tool_name: string | null;
  currency: string;
  total: number;
  calls: number;
}

export interface ExecutionMetrics extends HistorySummary {
  p95_duration_ms: number | null;
  most_used: MostUsedTool[];
  /** Per currency over the project (tool_name null), then per tool and currency. */
  cost: CostTotal[];
}

export interface ExecutionStats {
  history(
    projectId: string,
    f: ExecutionFilter,
    limit: number,
    after?: HistoryKey,
  ): Promise<HistoryRow[]>;
  summary(projectId: string, f: ExecutionFilter): Promise<HistorySummary>;
  metrics(
    projectId: string,
    range: { from?: Date | undefined; to?: Date | undefined },
    top: number,
  ): Promise<ExecutionMetrics>;
}

const COLUMNS = `e.project_id, e.tool_call_id, e.channel, e.tool_name, e.target, e.agent_id, e.status,
  e.error_code, e.instance_id, e.attempts, e.card_id, e.created_at, e.started_at, e.finished_at,
  e.duration_ms, e.cost, e.cost_currency, e.arguments, e.turn_id, e.task_id, e.session_id,
  e.context_metadata, e.key_id, e.credential_id, e.timeout_ms`;

/** Rows of `e` started by the key in a parameter (any row when it is NULL); see ExecutionFilter. */
export const STARTED_BY = (key: string) =>
  `(${key}::uuid IS NULL OR e.key_id = ${key}::uuid OR e.task_id IN
     (SELECT k.task_id FROM state.tasks k WHERE k.project_id = e.project_id AND k.key_id = ${key}::uuid))`;

// One statement for every combination of filters: an absent filter is a NULL parameter.
const FILTER = `e.project_id = $1
  AND ($2::text IS NULL OR e.tool_name = $2)
  AND ($3::text IS NULL OR t.category = $3)
  AND ($4::text IS NULL OR e.status = $4)
  AND ($5::text IS NULL OR e.channel = $5)
  AND ($6::timestamptz IS NULL OR e.started_at >= $6)
  AND ($7::timestamptz IS NULL OR e.started_at < $7)
  AND ($8::text IS NULL OR e.agent_id = $8)
  AND ($9::uuid IS NULL OR e.task_id = $9)
  AND ($10::text IS NULL OR e.turn_id = $10)
  AND ($11::text IS NULL OR e.session_id = $11)
  AND ${STARTED_BY('$12')}`;
const FROM = `state.tool_executions e
  LEFT JOIN resource.tools t ON t.project_id = e.project_id AND t.name = e.tool_name`;

const COUNTS = `count(*) AS total,
  count(*) FILTER (WHERE e.status = 'queued') AS queued,
  count(*) FILTER (WHERE e.status = 'awaiting_approval') AS awaiting_approval,
  count(*) FILTER (WHERE e.status = 'running') AS running,
  count(*) FILTER (WHERE e.status = 'succeeded') AS succeeded,
  count(*) FILTER (WHERE e.status = 'failed') AS failed,
  count(*) FILTER (WHERE e.status = 'timeout') AS timeout,
  count(*) FILTER (WHERE e.status = 'canceled') AS canceled,
  avg(e.duration_ms) AS avg_duration_ms`;

const filterValues = (projectId: string, f: ExecutionFilter) => [
  projectId,
  f.tool ?? null,
  f.category ?? null,
  f.status ?? null,
  f.channel ?? null,
  f.from ?? null,
  f.to ?? null,
  f.agent ?? null,
  f.task ?? null,
  f.turn ?? null,
  f.session ?? null,
  f.key ?? null,
];

// count(*) arrives as a string (bigint), avg as a number or null.
type CountRow = Record<ExecutionStatus | 'total', string> & { avg_duration_ms: number | null };

function toSummary(r: CountRow | undefined): HistorySummary {
  const n = (k: ExecutionStatus | 'total') => Number(r?.[k] ?? 0);
  return {
    total: n('total'),
    avg_duration_ms: r?.avg_duration_ms ?? null,
    by_status: {
      queued: n('queued'),
      awaiting_approval: n('awaiting_approval'),
      running: n('running'),
      succeeded: n('succeeded'),
      failed: n('failed'),
      timeout: n('timeout'),
      canceled: n('canceled'),
    },
  };
}

export function createExecutionStats(db: Db): ExecutionStats {
  return {
    history: (projectId, f, limit, after) =>
      db.query<HistoryRow>(
        'executions_history',
        `SELECT ${COLUMNS}, t.category, e.started_at::text AS sort_started_at
         FROM ${FROM}
         WHERE ${FILTER}
           AND ($13::timestamptz IS NULL OR (e.started_at, e.tool_call_id) < ($13::timestamptz, $14::text))
         ORDER BY e.started_at DESC, e.tool_call_id DESC
         LIMIT $15`,
        [...filterValues(projectId, f), after?.startedAt ?? null, after?.toolCallId ?? null, limit],
      ),
    summary: async (projectId, f) =>
      toSummary(
        (
          await db.query<CountRow>(
            'executions_summary',
            `SELECT ${COUNTS} FROM ${FROM} WHERE ${FILTER}`,
            filterValues(projectId, f),
          )
        )[0],
      ),
    metrics: async (projectId, range, top) => {
      const values = filterValues(projectId, { from: range.from, to: range.to });
      const [totals, tools, costs] = await Promise.all([
        db.query<CountRow & { p95_duration_ms: number | null }>(
          'executions_metrics',
          `SELECT ${COUNTS},
             percentile_cont(0.95) WITHIN GROUP (ORDER BY e.duration_ms) AS p95_duration_ms
           FROM ${FROM} WHERE ${FILTER}`,
          values,
        ),
        db.query<Record<'count' | 'succeeded' | 'finished', string> & ToolUsageBase>(
          'executions_most_used',
          `SELECT e.tool_name, count(*) AS count,
             count(*) FILTER (WHERE e.status = 'succeeded') AS succeeded,
             count(*) FILTER (WHERE e.status NOT IN ('queued', 'awaiting_approval', 'running')) AS finished,
             avg(e.duration_ms) AS avg_duration_ms
           FROM ${FROM} WHERE ${FILTER}
           GROUP BY e.tool_name ORDER BY count(*) DESC, e.tool_name LIMIT $13`,
          [...values, top],
        ),
        // GROUPING SETS: one row per currency for the project, one per tool and currency.
        db.query<{ tool_name: string | null; currency: string; total: number; calls: string }>(
          'executions_cost',
          `SELECT e.tool_name, e.cost_currency AS currency, sum(e.cost) AS total, count(*) AS calls
           FROM ${FROM} WHERE ${FILTER} AND e.cost IS NOT NULL
           GROUP BY GROUPING SETS ((e.cost_currency), (e.tool_name, e.cost_currency))
           ORDER BY e.tool_name NULLS FIRST, e.cost_currency`,
          values,
        ),
      ]);
      return {
        ...toSummary(totals[0]),
        p95_duration_ms: totals[0]?.p95_duration_ms ?? null,
        most_used: tools.map((t) => ({
          tool_name: t.tool_name,
          count: Number(t.count),
          succeeded: Number(t.succeeded),
          finished: Number(t.finished),
          avg_duration_ms: t.avg_duration_ms,
        })),
        cost: costs.map((c) => ({
          tool_name: c.tool_name,
          currency: c.currency,
          total: Number(c.total),
          calls: Number(c.calls),
        })),
      };
    },
  };
}

interface ToolUsageBase {
  tool_name: string;
  avg_duration_ms: number | null;
}
