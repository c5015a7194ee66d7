// What the operator console lists that no other route did: a project's recent tasks and
// artifacts, and its executions bucketed per minute (calls, p50/p95, failures) for the charts.
import type { Db } from '../core/db.ts';

export interface TaskListing {
  task_id: string;
  agent_id: string;
  channel: string;
  status: string;
  final_card_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export interface ArtifactListing {
  artifact_id: string;
  filename: string;
  mime: string;
  size_bytes: number;
  tool_call_id: string | null;
  created_at: Date;
}

export interface MinuteBucket {
  minute: Date;
  calls: number;
  failed: number;
  p50_ms: number | null;
  p95_ms: number | null;
}

export interface ToolFailures {
  tool_name: string;
  calls: number;
  failed: number;
}

export interface ConsoleReadsRepo {
  tasks(projectId: string, agentId: string | undefined, limit: number): Promise<TaskListing[]>;
  artifacts(projectId: string, limit: number): Promise<ArtifactListing[]>;
  perMinute(projectId: string, since: Date): Promise<MinuteBucket[]>;
  failuresByTool(projectId: string, since: Date): Promise<ToolFailures[]>;
  /** The arguments of a call an agent made (its tool.call card); undefined for other calls. */
  callArguments(projectId: string, toolCallId: string): Promise<unknown>;
}

/** Statuses that count as a failure on the charts. */
const FAILED = `e.status IN ('failed', 'timeout', 'canceled')`;

export function createConsoleReadsRepo(db: Db): ConsoleReadsRepo {
  return {
    tasks: (projectId, agentId, limit) =>
      db.query<TaskListing>(
        'console_tasks',
        `SELECT task_id, agent_id, channel, status, final_card_id, created_at,
           updated_at
         FROM state.tasks
         WHERE project_id = $1 AND ($2::text IS NULL OR agent_id = $2)
         ORDER BY created_at DESC, task_id DESC LIMIT $3`,
        [projectId, agentId ?? null, limit],
      ),
    artifacts: (projectId, limit) =>
      db.query<ArtifactListing>(
        'console_artifacts',
        `SELECT artifact_id, filename, mime, size_bytes::float8 AS size_bytes, tool_call_id,
           created_at
         FROM resource.artifacts WHERE project_id = $1
         ORDER BY created_at DESC, artifact_id DESC LIMIT $2`,
        [projectId, limit],
      ),
    perMinute: async (projectId, since) =>
      (
        await db.query<{
          minute: Date;
          calls: string;
          failed: string;
          p50_ms: number | null;
          p95_ms: number | null;
        }>(
          'console_per_minute',
          `SELECT date_trunc('minute', e.started_at) AS minute, count(*) AS calls,
             count(*) FILTER (WHERE ${FAILED}) AS failed,
             percentile_cont(0.5) WITHIN GROUP (ORDER BY e.duration_ms) AS p50_ms,
             percentile_cont(0.95) WITHIN GROUP (ORDER BY e.duration_ms) AS p95_ms
           FROM state.tool_executions e
           WHERE e.project_id = $1 AND e.started_at >= $2
           GROUP BY 1 ORDER BY 1`,
          [projectId, since],
        )
      ).map((r) => ({ ...r, calls: Number(r.calls), failed: Number(r.failed) })),
    failuresByTool: async (projectId, since) =>
      (
        await db.query<{ tool_name: string; calls: string; failed: string }>(
          'console_failures_by_tool',
          `SELECT e.tool_name, count(*) AS calls, count(*) FILTER (WHERE ${FAILED}) AS failed
           FROM state.tool_executions e
           WHERE e.project_id = $1 AND e.started_at >= $2
           GROUP BY e.tool_name ORDER BY count(*) DESC, e.tool_name LIMIT 50`,
          [projectId, since],
        )
      ).map((r) => ({ tool_name: r.tool_name, calls: Number(r.calls), failed: Number(r.failed) })),
    callArguments: async (projectId, toolCallId) =>
      (
        await db.query<{ args: unknown }>(
          'console_call_arguments',
          `SELECT content->'arguments' AS args FROM cards
           WHERE project_id = $1 AND tool_call_id = $2 AND kind = 'tool.call'
           ORDER BY created_at LIMIT 1`,
          [projectId, toolCallId],
        )
      )[0]?.args,
  };
}
