// Per-project quotas ([quotas] in the configuration), enforced in Postgres so that every
// instance sees one count: what is counted is inserted in the same transaction as the count,
// after the project's advisory lock for that quota (one per project and quota), so two instances
// admitting work of one project at once are counted one after the other and cannot both let it
// past its limit. A limit of 0 is no quota: the insert runs alone, as before.
// Sandboxes and running tasks are counted from their own rows (state.sandboxes `active`;
// state.skill_tasks and state.skill_jobs `running`); calls in flight hold a row of
// state.call_slots while they run (see migration 0012).
import type { Db } from '../core/db.ts';
import { createSandboxesRepo, type NewSandbox, type SandboxRecord } from '../skills/sandboxes.ts';
import {
  createSkillJobsRepo,
  type NewSkillJob,
  type SkillJobRecord,
} from '../skills/skill-jobs.ts';
import {
  createSkillTasksRepo,
  type NewSkillTask,
  type SkillTaskRecord,
} from '../skills/skill-tasks.ts';

export const Quota = {
  calls: 'calls',
  sandboxes: 'sandboxes',
  running_tasks: 'running_tasks',
} as const;
export type Quota = (typeof Quota)[keyof typeof Quota];

/** The project was at its limit: nothing was inserted. */
export interface QuotaRefusal {
  readonly admitted: false;
  readonly quota: Quota;
  readonly limit: number;
  /** What was counted against the limit when the work was refused. */
  readonly current: number;
}

export type Admission<T> = { readonly admitted: true; readonly value: T } | QuotaRefusal;

export interface QuotasRepo {
  /** The project's count for a quota now (a cheap look before costly work; not a decision). */
  count(quota: Exclude<Quota, 'calls'>, projectId: string): Promise<number>;
  /** sandboxes.claim, admitted against the project's live sandboxes. */
  claimSandbox(s: NewSandbox, limit: number): Promise<Admission<SandboxRecord | undefined>>;
  /** skillTasks.insert, admitted against the project's running tasks and jobs. */
  insertTask(t: NewSkillTask, limit: number): Promise<Admission<SkillTaskRecord>>;
  /** skillJobs.insert, admitted against the project's running tasks and jobs. */
  insertJob(j: NewSkillJob, limit: number): Promise<Admission<SkillJobRecord | undefined>>;
  /**
   * Takes a slot for a call in flight, held until `releaseCall` or `ttlMs` from now (a dead
   * instance's slots lapse). A redelivered call takes its own slot again without counting it.
   */
  takeCall(
    slot: { projectId: string; toolCallId: string; instanceId: string; ttlMs: number },
    limit: number,
  ): Promise<Admission<undefined>>;
  releaseCall(projectId: string, toolCallId: string): Promise<void>;
}

const COUNT_SQL: Record<Exclude<Quota, 'calls'>, string> = {
  sandboxes: `SELECT count(*)::int AS n FROM state.sandboxes
    WHERE project_id = $1 AND state = 'active'`,
  running_tasks: `SELECT ((SELECT count(*) FROM state.skill_tasks
      WHERE project_id = $1 AND status = 'running')
    + (SELECT count(*) FROM state.skill_jobs
      WHERE project_id = $1 AND status = 'running'))::int AS n`,
};

async function countOn(db: Db, quota: Exclude<Quota, 'calls'>, projectId: string) {
  const rows = await db.query<{ n: number }>(`quota_count_${quota}`, COUNT_SQL[quota], [projectId]);
  return rows[0]?.n ?? 0;
}

/** Runs `insert` only when the project is under `limit`, counted under the project's lock. */
async function within<T>(
  db: Db,
  quota: Exclude<Quota, 'calls'>,
  projectId: string,
  limit: number,
  insert: (db: Db) => Promise<T>,
): Promise<Admission<T>> {
  if (limit === 0) return { admitted: true, value: await insert(db) };
  return db.tx(async (t) => {
    await t.query('quota_lock', 'SELECT pg_advisory_xact_lock(hashtextextended($1, 0))', [
      `toolmesh.quota:${quota}:${projectId}`,
    ]);
    // Read committed: this statement's snapshot is taken after the lock, so it sees every row
    // the previous holder of the lock committed.
    const current = await countOn(t, quota, projectId);
    if (current >= limit) return { admitted: false, quota, limit, current };
    return { admitted: true, value: await insert(t) };
  });
}

export function createQuotasRepo(db: Db): QuotasRepo {
  return {
    count: (quota, projectId) => countOn(db, quota, projectId),
    claimSandbox: (s, limit) =>
      within(db, Quota.sandboxes, s.projectId, limit, (t) => createSandboxesRepo(t).claim(s)),
    insertTask: (task, limit) =>
      within(db, Quota.running_tasks, task.projectId, limit, (t) =>
        createSkillTasksRepo(t).insert(task),
      ),
    insertJob: (job, limit) =>
      within(db, Quota.running_tasks, job.projectId, limit, (t) =>
        createSkillJobsRepo(t).insert(job),
      ),
    takeCall: async (slot, limit) => {
      if (limit === 0) return { admitted: true, value: undefined };
      const rows = await db.query<{ n: number }>(
        'quota_take_call',
        'SELECT state.take_call_slot($1, $2, $3, $4, $5) AS n',
        [slot.projectId, slot.toolCallId, slot.instanceId, slot.ttlMs, limit],
      );
      const n = rows[0]?.n ?? -1;
      return n < 0
        ? { admitted: true, value: undefined }
        : { admitted: false, quota: Quota.calls, limit, current: n };
    },
    releaseCall: async (projectId, toolCallId) => {
      await db.query(
        'quota_release_call',
        'DELETE FROM state.call_slots WHERE project_id = $1 AND tool_call_id = $2',
        [projectId, toolCallId],
      );
    },
  };
}
