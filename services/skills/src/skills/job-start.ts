// skills.start_job: claims the session's one running-job slot (a partial unique index in
// state.skill_jobs), returns the job id at once and runs the steps in the background, one
// after another in one sandbox, each with its own time limit and env. The first step that does
// not succeed ends the job and the rest are `skipped`; a cancel kills the running step's
// process group and ends the job `canceled`. The owner writes the head after every step.
import { randomUUID } from 'node:crypto';
import { ToolError } from '@toolmesh/protocol';
import type { BackgroundProcess } from '@toolmesh/sandbox';
import { StartJobArgs } from '@toolmesh/skills';
import type { SkillJobStep } from '@toolmesh/store';
import { defineTool, type ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { placeSkill, skillPath } from './place.ts';
import { limitErrorOf } from './limit-error.ts';
import { admitted } from './quota.ts';
import { sandboxFor, type Lease } from './sessions.ts';
import type { RunningTask, TaskRegistry } from './tasks.ts';

/** Starting a job (sandbox, skill, head) must fit in this; the steps do not. */
const START_TIMEOUT_MS = 120_000;

type JobStepArgs = StartJobArgs['steps'][number];
type RunningJob = RunningTask & { current: BackgroundProcess | undefined };

export function startJobTool(deps: SkillsDeps, registry: TaskRegistry) {
  return defineTool({
    name: 'start_job',
    description:
      'Starts ordered steps in one sandbox and returns a job id at once; job_status, job_watch and job_cancel follow it.',
    args: StartJobArgs,
    timeoutMs: START_TIMEOUT_MS,
    handler: async (args, ctx) => {
      const lease = await sandboxFor(deps, ctx, args.session_id);
      let started = false;
      try {
        const placed = args.skill
          ? await placeSkill(deps, lease.sandbox, ctx.project, args.skill, undefined, ctx)
          : undefined;
        const base = placed ? skillPath(placed.name) : '';
        const jobId = randomUUID();
        const sessionKey = lease.sessionKey;
        const steps: SkillJobStep[] = args.steps.map((s) => ({
          command: s.command,
          // Clamped, not refused: the schema allows 24 h, the deployment may allow less.
          timeout_ms: Math.min(
            s.timeout_ms ?? deps.limits.runTimeoutDefaultMs,
            deps.limits.taskTimeoutMaxMs,
          ),
          status: 'pending',
          exit_code: null,
          signal: null,
          stdout_tail: '',
          stderr_tail: '',
          stdout_truncated: false,
          stderr_truncated: false,
          pid: null,
          proc_start_time: null,
          started_at: null,
          finished_at: null,
        }));
        // Counted with the project's running tasks ([quotas] running_tasks_per_project).
        const head = admitted(
          await deps.store.quotas.insertJob(
            {
              jobId,
              projectId: ctx.project,
              agentId: ctx.agentId ?? null,
              toolCallId: ctx.toolCallId,
              sandboxId: lease.sandbox.id,
              sessionKey,
              ownerInstance: deps.instanceId,
              steps,
            },
            deps.quotas.runningTasksPerProject,
          ),
        );
        if (!head) {
          throw new ToolError(`session ${args.session_id ?? ''} already has a running job`, {
            details: { reason: 'session_busy', session_id: args.session_id },
          });
        }
        started = true;
        // The steps go on alone: other calls may use the session beside them.
        await lease
          .detach()
          .catch((err: unknown) => ctx.logger.warn({ err }, 'unlocking the session failed'));
        const job: RunningJob = {
          project: ctx.project,
          canceled: false,
          current: undefined,
          // A cancel between steps finds no process; the runner sees `canceled` before the next.
          kill: async () => {
            await job.current?.kill();
          },
          done: Promise.resolve(),
        };
        registry.running.set(jobId, job);
        job.done = runJob(deps, ctx, lease, job, jobId, {
          steps,
          env: args.steps.map((s: JobStepArgs) => ({ ...placed?.env?.vars, ...s.env })),
          base,
        }).finally(() => registry.running.delete(jobId));
        ctx.logger.info({ job_id: jobId, steps: steps.length }, 'job started');
        return { job_id: jobId, status: 'running', started_at: head.started_at.toISOString() };
      } finally {
        if (!started) {
          await lease
            .release()
            .catch((err: unknown) => ctx.logger.warn({ err }, 'releasing the sandbox failed'));
        }
      }
    },
  });
}

/**
 * Runs the steps in order, writing the head after each, then the final head, and releases the
 * sandbox. Never rejects: a failure is logged and, where possible, written into the head.
 */
async function runJob(
  deps: SkillsDeps,
  ctx: ToolContext,
  lease: Lease,
  job: RunningJob,
  jobId: string,
  o: { steps: SkillJobStep[]; env: Record<string, string>[]; base: string },
): Promise<void> {
  const log = ctx.logger.child({ job_id: jobId });
  const steps = o.steps;
  let status: 'succeeded' | 'failed' | 'timeout' | 'canceled' = 'succeeded';
  let error: Record<string, unknown> | null = null;
  try {
    for (const [i, step] of steps.entries()) {
      if (job.canceled) {
        status = 'canceled';
        break;
      }
      step.status = 'running';
      step.started_at = new Date().toISOString();
      const proc = await lease.sandbox.spawn(
        { shell: step.command },
        {
          env: o.env[i] ?? {},
          ...(o.base ? { cwd: o.base } : {}),
          timeoutMs: step.timeout_ms,
          limits: {
            stdoutBytes: deps.limits.stdoutTailBytes,
            stderrBytes: deps.limits.stderrTailBytes,
          },
        },
      );
      job.current = proc;
      // A cancel that came while the step was being spawned found nothing to kill.
      if (job.canceled) await proc.kill();
      step.pid = proc.pid;
      step.proc_start_time = proc.procStartTime ?? null;
      await deps.store.skillJobs.setSteps(jobId, steps);
      const r = await proc.wait();
      job.current = undefined;
      step.finished_at = new Date().toISOString();
      step.exit_code = r.exitCode;
      step.signal = r.signal;
      step.stdout_tail = r.stdout.text;
      step.stderr_tail = r.stderr.text;
      step.stdout_truncated = r.stdout.truncated;
      step.stderr_truncated = r.stderr.truncated;
      // A cancel sets the flag before it kills the process, so the kill reads as `canceled`.
      const limit = limitErrorOf(r);
      if (limit !== undefined) {
        step.status = 'failed';
        status = 'failed';
        error = { code: limit.code, message: `step ${i}: ${limit.message}` };
      } else if (r.timedOut) {
        step.status = 'timeout';
        status = 'timeout';
        error = {
          code: 'timeout',
          message: `step ${i} ran past its time limit of ${step.timeout_ms} ms and was killed`,
        };
      } else if (job.canceled || r.canceled) {
        step.status = 'canceled';
        status = 'canceled';
      } else if (r.exitCode !== 0) {
        step.status = 'failed';
        status = 'failed';
        error = { code: 'tool_error', message: `step ${i} exited with code ${r.exitCode}` };
      } else {
        step.status = 'succeeded';
      }
      if (step.status !== 'succeeded') break;
      if (i < steps.length - 1) await deps.store.skillJobs.setSteps(jobId, steps);
    }
  } catch (err) {
    // A head write failed mid-step: the step must not outlive the job that nobody can see end.
    await job.current
      ?.kill()
      .catch((e: unknown) => log.warn({ err: e }, 'killing the step failed'));
    job.current = undefined;
    status = 'failed';
    error = { code: 'internal_error', message: `running the job failed: ${String(err)}` };
    for (const s of steps) {
      if (s.status === 'running') {
        s.status = 'failed';
        s.finished_at = new Date().toISOString();
      }
    }
  }
  for (const s of steps) if (s.status === 'pending') s.status = 'skipped';
  try {
    await deps.store.skillJobs.finish(jobId, status, steps, error);
    log.info({ status }, 'job finished');
  } catch (err) {
    // The head stays `running` (and the session busy) until a reaper ends it.
    log.error({ err }, 'writing the final job head failed');
  }
  await lease.release().catch((err: unknown) => log.warn({ err }, 'releasing the sandbox failed'));
}
