// Skill jobs (state.skill_jobs): the durable head of an ordered list of commands run in one
// sandbox. Every read is scoped by project, so a job id of another project reads as absent.
// Inserting a running job into a session that already has one inserts nothing (a partial
// unique index decides). Writes only touch a running job: whoever ends it first wins.
import type { Db } from '../core/db.ts';
import type { SkillTaskStatus } from './skill-tasks.ts';

export type SkillJobStatus = SkillTaskStatus;

export const SkillJobStepStatus = {
  pending: 'pending',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  timeout: 'timeout',
  canceled: 'canceled',
  skipped: 'skipped',
  /** The step's process was lost with its owner (set by the reaper). */
  orphaned: 'orphaned',
} as const;
export type SkillJobStepStatus = (typeof SkillJobStepStatus)[keyof typeof SkillJobStepStatus];

export interface SkillJobStep {
  command: string;
  timeout_ms: number;
  status: SkillJobStepStatus;
  exit_code: number | null;
  signal: string | null;
  stdout_tail: string;
  stderr_tail: string;
  stdout_truncated: boolean;
  stderr_truncated: boolean;
  pid: number | null;
  proc_start_time: string | null;
  started_at: string | null;
  finished_at: string | null;
}

export interface SkillJobRecord {
  job_id: string;
  project_id: string;
  agent_id: string | null;
  tool_call_id: string;
  sandbox_id: string;
  session_key: string | null;
  status: SkillJobStatus;
  owner_instance: string;
  steps: SkillJobStep[];
  started_at: Date;
  finished_at: Date | null;
  error: Record<string, unknown> | null;
  updated_at: Date;
}

export interface NewSkillJob {
  jobId: string;
  projectId: string;
  agentId: string | null;
  toolCallId: string;
  sandboxId: string;
  sessionKey: string | null;
  ownerInstance: string;
  steps: SkillJobStep[];
}

export interface SkillJobsRepo {
  /** The new head; undefined when the session already has a running job. */
  insert(j: NewSkillJob): Promise<SkillJobRecord | undefined>;
  /** The job of this project; undefined when there is none (or it belongs to another). */
  get(projectId: string, jobId: string): Promise<SkillJobRecord | undefined>;
  /** Replaces the steps of a running job; undefined when it had already ended. */
  setSteps(jobId: string, steps: SkillJobStep[]): Promise<SkillJobRecord | undefined>;
  /** Writes the final state of a running job; undefined when it had already ended. */
  finish(
    jobId: string,
    status: Exclude<SkillJobStatus, 'running'>,
    steps: SkillJobStep[],
    error: Record<string, unknown> | null,
  ): Promise<SkillJobRecord | undefined>;
  /** Running jobs owned by one instance (the reaper's scan). */
  listRunning(ownerInstance: string): Promise<SkillJobRecord[]>;
  /** Every running job, whoever owns it (the reaper's scan of dead owners). */
  listAllRunning(): Promise<SkillJobRecord[]>;
}

const COLUMNS = `job_id, project_id, agent_id, tool_call_id, sandbox_id, session_key, status,
  owner_instance, steps, started_at, finished_at, error, updated_at`;

export function createSkillJobsRepo(db: Db): SkillJobsRepo {
  return {
    insert: async (j) =>
      (
        await db.query<SkillJobRecord>(
          'skill_jobs_insert',
          `INSERT INTO state.skill_jobs (job_id, project_id, agent_id, tool_call_id, sandbox_id,
             session_key, owner_instance, steps)
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
           ON CONFLICT DO NOTHING
           RETURNING ${COLUMNS}`,
          [
            j.jobId,
            j.projectId,
            j.agentId,
            j.toolCallId,
            j.sandboxId,
            j.sessionKey,
            j.ownerInstance,
            JSON.stringify(j.steps),
          ],
        )
      )[0],
    get: async (projectId, jobId) =>
      (
        await db.query<SkillJobRecord>(
          'skill_jobs_get',
          `SELECT ${COLUMNS} FROM state.skill_jobs WHERE job_id = $1 AND project_id = $2`,
          [jobId, projectId],
        )
      )[0],
    setSteps: async (jobId, steps) =>
      (
        await db.query<SkillJobRecord>(
          'skill_jobs_set_steps',
          `UPDATE state.skill_jobs SET steps = $2, updated_at = now()
           WHERE job_id = $1 AND status = 'running'
           RETURNING ${COLUMNS}`,
          [jobId, JSON.stringify(steps)],
        )
      )[0],
    finish: async (jobId, status, steps, error) =>
      (
        await db.query<SkillJobRecord>(
          'skill_jobs_finish',
          `UPDATE state.skill_jobs SET status = $2, steps = $3, error = $4,
             finished_at = now(), updated_at = now()
           WHERE job_id = $1 AND status = 'running'
           RETURNING ${COLUMNS}`,
          [jobId, status, JSON.stringify(steps), error === null ? null : JSON.stringify(error)],
        )
      )[0],
    listRunning: async (ownerInstance) =>
      db.query<SkillJobRecord>(
        'skill_jobs_list_running',
        `SELECT ${COLUMNS} FROM state.skill_jobs WHERE owner_instance = $1 AND status = 'running'`,
        [ownerInstance],
      ),
    listAllRunning: async () =>
      db.query<SkillJobRecord>(
        'skill_jobs_list_all_running',
        `SELECT ${COLUMNS} FROM state.skill_jobs WHERE status = 'running'`,
        [],
      ),
  };
}
