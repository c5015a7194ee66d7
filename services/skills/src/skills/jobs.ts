// Skill jobs: ordered steps in one sandbox (skills.start_job), followed by job_status,
// job_watch and job_cancel from any instance. The head is in Postgres (state.skill_jobs); the
// running step's process handle lives in a registry of this instance, the same kind the async
// tasks use, so a cancel on `ctl.task.skills.cancel` reaches whichever instance runs the job.
import { JobRef, JobWatchArgs } from '@toolmesh/skills';
import type { SkillJobRecord, SkillsStore } from '@toolmesh/store';
import { defineTool, type ToolDefinition } from '@toolmesh/tool-service';
import { ToolError } from '@toolmesh/protocol';
import type { SkillsDeps } from './deps.ts';
import { startJobTool } from './job-start.ts';
import {
  CANCEL_REPLY_MS,
  FINISH_MARGIN_MS,
  requestCancel,
  scopedHead,
  TERMINAL,
  WATCH_MAX_MS,
  watchHead,
} from './owned.ts';
import { createTaskRegistry } from './tasks.ts';

/** The head of a job of this project; see scopedHead for ids of other projects. */
export const jobHeadOf = (deps: SkillsDeps<SkillsStore>, project: string, jobId: string) =>
  scopedHead('job', jobId, (id) => deps.store.skillJobs.get(project, id));

const durationMs = (from: string | Date | null, to: string | Date | null) =>
  from === null
    ? null
    : Math.max(0, new Date(to ?? Date.now()).getTime() - new Date(from).getTime());

/** What the job tools return: the head without the instance-private fields (owner, pids). */
export function jobViewOf(h: SkillJobRecord) {
  return {
    job_id: h.job_id,
    status: h.status,
    sandbox_id: h.sandbox_id,
    started_at: h.started_at.toISOString(),
    finished_at: h.finished_at?.toISOString() ?? null,
    duration_ms: durationMs(h.started_at, h.finished_at),
    steps: h.steps.map((s, index) => ({
      index,
      command: s.command,
      status: s.status,
      timeout_ms: s.timeout_ms,
      exit_code: s.exit_code,
      signal: s.signal,
      stdout: s.stdout_tail,
      stderr: s.stderr_tail,
      stdout_truncated: s.stdout_truncated,
      stderr_truncated: s.stderr_truncated,
      started_at: s.started_at,
      finished_at: s.finished_at,
      duration_ms: durationMs(s.started_at, s.finished_at),
    })),
    error: h.error,
  };
}

function jobStatusTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'job_status',
    description:
      'Returns the state of a job: its status and each step with exit code and output tails.',
    args: JobRef,
    handler: async (args, ctx) => jobViewOf(await jobHeadOf(deps, ctx.project, args.job_id)),
  });
}

function jobWatchTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'job_watch',
    description:
      'Waits for a job to end (or for timeout_ms), sending heartbeats meanwhile; returns its state.',
    args: JobWatchArgs,
    timeoutMs: WATCH_MAX_MS + FINISH_MARGIN_MS,
    handler: async (args, ctx) => {
      const { head, timedOut } = await watchHead(deps, ctx, {
        read: () => jobHeadOf(deps, ctx.project, args.job_id),
        status: (h) => h.status,
        detail: (h) => ({
          job_id: h.job_id,
          status: h.status,
          step: h.steps.findIndex((s) => s.status === 'running'),
        }),
        timeoutMs: args.timeout_ms,
        heartbeatMs: args.heartbeat_ms,
      });
      return { ...jobViewOf(head), watch_timed_out: timedOut };
    },
  });
}

function jobCancelTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'job_cancel',
    description:
      "Cancels a job: kills the running step's processes and skips the rest; returns its final state.",
    args: JobRef,
    timeoutMs: CANCEL_REPLY_MS + 5_000,
    handler: async (args, ctx) => {
      const head = await jobHeadOf(deps, ctx.project, args.job_id);
      if (TERMINAL.has(head.status)) return { ...jobViewOf(head), canceled: false };
      const answered = await requestCancel(deps, ctx, head.job_id);
      const after = await jobHeadOf(deps, ctx.project, args.job_id);
      if (after.status === 'running') {
        throw new ToolError('the instance running the job did not confirm the cancel', {
          details: { reason: 'owner_unreachable', job_id: head.job_id },
        });
      }
      return { ...jobViewOf(after), canceled: answered && after.status === 'canceled' };
    },
  });
}

/** The four job tools, sharing this instance's registry of running jobs. */
export function jobTools(deps: SkillsDeps): ToolDefinition[] {
  const registry = createTaskRegistry(deps);
  registry.listen();
  return [
    startJobTool(deps, registry),
    jobStatusTool(deps),
    jobWatchTool(deps),
    jobCancelTool(deps),
  ] as ToolDefinition[];
}
