// The tool execution log (state.tool_executions): one row per tool call, opened when a handler
// starts and closed with the result card (see results.ts). Status, history, metrics and the
// list of active executions read from here.
import type { ResultStatus } from '@toolmesh/protocol';
import type { Db } from './db.ts';

export type ExecutionStatus = 'queued' | 'running' | ResultStatus;

export interface Execution {
  project_id: string;
  tool_call_id: string;
  channel: string;
  tool_name: string;
  target: string;
  agent_id: string | null;
  status: ExecutionStatus;
  error_code: string | null;
  instance_id: string;
  attempts: number;
  card_id: string | null;
  started_at: Date;
  finished_at: Date | null;
  duration_ms: number | null;
}

export interface StartExecution {
  projectId: string;
  toolCallId: string;
  channel: string;
  toolName: string;
  target: string;
  agentId?: string | undefined;
  instanceId: string;
}

export interface ExecutionsRepo {
  /** Opens (or, on a retry, re-opens) the row as running; a finished row is left alone. */
  start(e: StartExecution): Promise<void>;
  get(projectId: string, toolCallId: string): Promise<Execution | undefined>;
  running(projectId: string): Promise<Execution[]>;
}

const COLUMNS = `project_id, tool_call_id, channel, tool_name, target, agent_id, status, error_code,
  instance_id, attempts, card_id, started_at, finished_at, duration_ms`;

export function createExecutionsRepo(db: Db): ExecutionsRepo {
  return {
    start: async (e) => {
      await db.query(
        'executions_start',
        `INSERT INTO state.tool_executions
           (project_id, tool_call_id, channel, tool_name, target, agent_id, status, instance_id)
         VALUES ($1, $2, $3, $4, $5, $6, 'running', $7)
         ON CONFLICT (project_id, md5(tool_call_id)) DO UPDATE
           SET attempts = state.tool_executions.attempts + 1,
               instance_id = EXCLUDED.instance_id,
               started_at = now()
           WHERE state.tool_executions.status IN ('queued', 'running')`,
        [
          e.projectId,
          e.toolCallId,
          e.channel,
          e.toolName,
          e.target,
          e.agentId ?? null,
          e.instanceId,
        ],
      );
    },
    get: async (projectId, toolCallId) =>
      (
        await db.query<Execution>(
          'executions_get',
          `SELECT ${COLUMNS} FROM state.tool_executions WHERE tool_call_id = $2 AND project_id = $1`,
          [projectId, toolCallId],
        )
      )[0],
    running: (projectId) =>
      db.query<Execution>(
        'executions_running',
        `SELECT ${COLUMNS} FROM state.tool_executions
         WHERE project_id = $1 AND status = 'running' ORDER BY started_at`,
        [projectId],
      ),
  };
}
