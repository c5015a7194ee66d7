// Async skill tasks (state.skill_tasks): the durable head of a command left running in a
// sandbox. Every read is scoped by project, so a task id of another project reads as absent.
// The final write only moves a task out of `running`: whoever finishes it first (the owner's
// wait, a cancel, the reaper) wins and later writes change nothing.
import type { Db } from '../core/db.ts';

export const SkillTaskStatus = {
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  timeout: 'timeout',
  canceled: 'canceled',
  orphaned: 'orphaned',
} as const;
export type SkillTaskStatus = (typeof SkillTaskStatus)[keyof typeof SkillTaskStatus];

export interface SkillTaskRecord {
  task_id: string;
  project_id: string;
  agent_id: string | null;
  tool_call_id: string;
  sandbox_id: string;
  session_key: string | null;
  command: string;
  status: SkillTaskStatus;
  owner_instance: string;
  pid: number | null;
  proc_start_time: string | null;
  started_at: Date;
  finished_at: Date | null;
  exit_code: number | null;
  signal: string | null;
  stdout_tail: string | null;
  stderr_tail: string | null;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  artifacts: unknown[];
  output_errors: unknown[];
  error: Record<string, unknown> | null;
  /** A service task's exposed ports (skills.run_service); empty for other tasks. */
  endpoints: unknown[];
  updated_at: Date;
}

export interface NewSkillTask {
  taskId: string;
  projectId: string;
  agentId: string | null;
  toolCallId: string;
  sandboxId: string;
  sessionKey: string | null;
  command: string;
  ownerInstance: string;
  /** Null for a head written before its process is spawned (the quota's slot); see setProcess. */
  pid: number | null;
  procStartTime: string | null;
  startedAt: Date;
}

export interface FinishSkillTask {
  status: Exclude<SkillTaskStatus, 'running'>;
  exitCode: number | null;
  signal: string | null;
  stdoutTail: string;
  stderrTail: string;
  stdoutTruncated: boolean;
  stderrTruncated: boolean;
  artifacts: unknown[];
  outputErrors: unknown[];
  error: Record<string, unknown> | null;
}

export interface SkillTasksRepo {
  insert(t: NewSkillTask): Promise<SkillTaskRecord>;
  /** The task of this project; undefined when there is none (or it belongs to another). */
  get(projectId: string, taskId: string): Promise<SkillTaskRecord | undefined>;
  /** Writes the final state of a running task; undefined when it had already finished. */
  finish(taskId: string, f: FinishSkillTask): Promise<SkillTaskRecord | undefined>;
  /** Running tasks owned by one instance (the reaper's scan). */
  listRunning(ownerInstance: string): Promise<SkillTaskRecord[]>;
  /** Running tasks of every instance (the reaper's scan: owners may be dead). */
  listAllRunning(): Promise<SkillTaskRecord[]>;
  /** Records the process of a head written before it was spawned; only while it runs. */
  setProcess(
    taskId: string,
    p: { pid: number; procStartTime: string | null; startedAt: Date },
  ): Promise<void>;
  /** Deletes a running head whose process never started (nobody was ever given its id). */
  discard(taskId: string): Promise<void>;
  /** Records a service task's endpoints; only while it runs. */
  setEndpoints(taskId: string, endpoints: unknown[]): Promise<void>;
}

const COLUMNS = `task_id, project_id, agent_id, tool_call_id, sandbox_id, session_key, command,
  status, owner_instance, pid, proc_start_time, started_at, finished_at, exit_code, signal,
  stdout_tail, stderr_tail, stdout_truncated, stderr_truncated, artifacts, output_errors, error,
  endpoints, updated_at`;

export function createSkillTasksRepo(db: Db): SkillTasksRepo {
  return {
    insert: async (t) => {
      const rows = await db.query<SkillTaskRecord>(
        'skill_tasks_insert',
        `INSERT INTO state.skill_tasks (task_id, project_id, agent_id, tool_call_id, sandbox_id,
           session_key, command, owner_instance, pid, proc_start_time, started_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)
         RETURNING ${COLUMNS}`,
        [
          t.taskId,
          t.projectId,
          t.agentId,
          t.toolCallId,
          t.sandboxId,
          t.sessionKey,
          t.command,
          t.ownerInstance,
          t.pid,
          t.procStartTime,
          t.startedAt,
        ],
      );
      return rows[0]!;
    },
    get: async (projectId, taskId) =>
      (
        await db.query<SkillTaskRecord>(
          'skill_tasks_get',
          `SELECT ${COLUMNS} FROM state.skill_tasks WHERE task_id = $1 AND project_id = $2`,
          [taskId, projectId],
        )
      )[0],
    finish: async (taskId, f) =>
      (
        await db.query<SkillTaskRecord>(
          'skill_tasks_finish',
          `UPDATE state.skill_tasks SET status = $2, exit_code = $3, signal = $4,
             stdout_tail = $5, stderr_tail = $6, stdout_truncated = $7, stderr_truncated = $8,
             artifacts = $9, output_errors = $10, error = $11,
             finished_at = now(), updated_at = now()
           WHERE task_id = $1 AND status = 'running'
           RETURNING ${COLUMNS}`,
          [
            taskId,
            f.status,
            f.exitCode,
            f.signal,
            f.stdoutTail,
            f.stderrTail,
            f.stdoutTruncated,
            f.stderrTruncated,
            JSON.stringify(f.artifacts),
            JSON.stringify(f.outputErrors),
            f.error === null ? null : JSON.stringify(f.error),
          ],
        )
      )[0],
    listRunning: async (ownerInstance) =>
      db.query<SkillTaskRecord>(
        'skill_tasks_list_running',
        `SELECT ${COLUMNS} FROM state.skill_tasks WHERE owner_instance = $1 AND status = 'running'`,
        [ownerInstance],
      ),
    listAllRunning: async () =>
      db.query<SkillTaskRecord>(
        'skill_tasks_list_all_running',
        `SELECT ${COLUMNS} FROM state.skill_tasks WHERE status = 'running'`,
        [],
      ),
    setProcess: async (taskId, p) => {
      await db.query(
        'skill_tasks_set_process',
        `UPDATE state.skill_tasks SET pid = $2, proc_start_time = $3, started_at = $4,
           updated_at = now()
         WHERE task_id = $1 AND status = 'running'`,
        [taskId, p.pid, p.procStartTime, p.startedAt],
      );
    },
    discard: async (taskId) => {
      await db.query(
        'skill_tasks_discard',
        `DELETE FROM state.skill_tasks WHERE task_id = $1 AND status = 'running' AND pid IS NULL`,
        [taskId],
      );
    },
    setEndpoints: async (taskId, endpoints) => {
      await db.query(
        'skill_tasks_set_endpoints',
        `UPDATE state.skill_tasks SET endpoints = $2, updated_at = now()
         WHERE task_id = $1 AND status = 'running'`,
        [taskId, JSON.stringify(endpoints)],
      );
    },
  };
}
