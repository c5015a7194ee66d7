// MCP Tasks of the facade: which tool calls were made as tasks, with their ttl and poll interval.
// A task's state is read with its execution row (status, card), so any api instance answers for
// any task, and nothing is kept twice.
import type { Db } from '../core/db.ts';
import type { ExecutionStatus } from './executions.ts';

export interface McpTaskRecord {
  project_id: string;
  task_id: string;
  ttl_ms: number | null;
  poll_interval_ms: number;
  created_at: Date;
  /** The execution's status; undefined if its row is gone (never for a live task). */
  status: ExecutionStatus | undefined;
  card_id: string | null;
  /** When the execution last changed: finished, else started. */
  updated_at: Date;
}

export interface McpTasksRepo {
  /** Records a task (idempotent: a re-sent create keeps the first row); returns the row. */
  create(t: {
    projectId: string;
    taskId: string;
    ttlMs: number | null;
    pollIntervalMs: number;
  }): Promise<McpTaskRecord>;
  /** A task of the project, unless its ttl ran out. */
  get(projectId: string, taskId: string): Promise<McpTaskRecord | undefined>;
  /** Live tasks of the project, newest first, `limit` after the cursor's (created_at, id). */
  list(
    projectId: string,
    o: { limit: number; after?: { createdAt: Date; taskId: string } | undefined },
  ): Promise<McpTaskRecord[]>;
}

interface Row {
  project_id: string;
  task_id: string;
  ttl_ms: string | null;
  poll_interval_ms: number;
  created_at: Date;
  status: ExecutionStatus | null;
  card_id: string | null;
  updated_at: Date;
}

const SELECT = `SELECT t.project_id, t.task_id, t.ttl_ms, t.poll_interval_ms, t.created_at,
    e.status, e.card_id, coalesce(e.finished_at, e.started_at, t.created_at) AS updated_at
  FROM state.mcp_tasks t
  LEFT JOIN state.tool_executions e
    ON md5(e.tool_call_id) = md5(t.task_id) AND e.project_id = t.project_id
      AND e.tool_call_id = t.task_id`;
const LIVE = `(t.ttl_ms IS NULL OR t.created_at + t.ttl_ms * interval '1 millisecond' > now())`;

const out = (r: Row): McpTaskRecord => ({
  project_id: r.project_id,
  task_id: r.task_id,
  ttl_ms: r.ttl_ms === null ? null : Number(r.ttl_ms),
  poll_interval_ms: r.poll_interval_ms,
  created_at: r.created_at,
  status: r.status ?? undefined,
  card_id: r.card_id,
  updated_at: r.updated_at,
});

export function createMcpTasksRepo(db: Db): McpTasksRepo {
  const get = async (projectId: string, taskId: string) => {
    const rows = await db.query<Row>(
      'mcp_tasks_get',
      `${SELECT} WHERE t.project_id = $1 AND t.task_id = $2 AND ${LIVE}`,
      [projectId, taskId],
    );
    return rows[0] ? out(rows[0]) : undefined;
  };
  return {
    create: async (t) => {
      await db.query(
        'mcp_tasks_create',
        `INSERT INTO state.mcp_tasks (project_id, task_id, ttl_ms, poll_interval_ms)
         VALUES ($1, $2, $3, $4) ON CONFLICT (project_id, task_id) DO NOTHING`,
        [t.projectId, t.taskId, t.ttlMs, t.pollIntervalMs],
      );
      const row = await get(t.projectId, t.taskId);
      if (!row) throw new Error(`MCP task ${t.taskId} vanished after it was recorded`);
      return row;
    },
    get,
    list: async (projectId, o) => {
      const rows = await db.query<Row>(
        'mcp_tasks_list',
        `${SELECT} WHERE t.project_id = $1 AND ${LIVE}
           AND ($3::timestamptz IS NULL OR (t.created_at, t.task_id) < ($3, $4))
         ORDER BY t.created_at DESC, t.task_id DESC LIMIT $2`,
        [projectId, o.limit, o.after?.createdAt ?? null, o.after?.taskId ?? null],
      );
      return rows.map(out);
    },
  };
}
