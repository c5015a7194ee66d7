// skills.run_cmd_async: starts a command in a sandbox and returns its task id at once. The
// process belongs to this instance: in the background it waits for the end, collects the
// outputs and writes the final head (state.skill_tasks). The call's one result is the task id;
// the task's end is in the head, read by task_status and task_watch from any instance.
// A task in a sandbox of its own (no session) has it destroyed when the task ends; a session's
// sandbox is unlocked once the task has started, so other calls may use it beside the task.
import { randomUUID } from 'node:crypto';
import type { BackgroundProcess, ExecResult } from '@toolmesh/sandbox';
import { RunCmdAsyncArgs } from '@toolmesh/skills';
import type { FinishSkillTask } from '@toolmesh/store';
import type { Sandbox } from '@toolmesh/sandbox';
import { defineTool, type ToolContext } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { collectOutputs } from './files.ts';
import { prepareCommand } from './prepare.ts';
import { limitErrorOf } from './limit-error.ts';
import { admitted } from './quota.ts';
import { sandboxFor, type Lease } from './sessions.ts';
import type { RunningTask, TaskRegistry } from './tasks.ts';

export type OwnTask = RunningTask & {
  readonly process: BackgroundProcess;
  /** Run once the process has ended, before the final head is written (run_service: forwarders). */
  onEnd: (() => Promise<void>) | undefined;
};

/** Starting a task (sandbox, skill, inputs, spawn) must fit in this; the task itself does not. */
const START_TIMEOUT_MS = 120_000;

export function runCmdAsyncTool(deps: SkillsDeps, registry: TaskRegistry) {
  return defineTool({
    name: 'run_cmd_async',
    description:
      'Starts a shell command in a sandbox and returns a task id at once; task_status, task_watch and task_cancel follow it.',
    args: RunCmdAsyncArgs,
    timeoutMs: START_TIMEOUT_MS,
    handler: async (args, ctx) => (await startTask(deps, registry, ctx, args)).result,
  });
}

/** A task just started: its id, its process and the registry entry (for run_service's hooks). */
export interface StartedTask {
  readonly taskId: string;
  readonly task: OwnTask;
  /** The sandbox the task runs in (its handle stays open while the task runs). */
  readonly sandbox: Sandbox;
  readonly result: {
    task_id: string;
    status: 'running';
    started_at: string;
    timeout_ms: number;
  };
}

/**
 * Starts a command as an async task (sandbox, skill, inputs, spawn, head, registry, finisher):
 * what run_cmd_async does, shared with run_service.
 */
export async function startTask(
  deps: SkillsDeps,
  registry: TaskRegistry,
  ctx: ToolContext,
  args: RunCmdAsyncArgs,
): Promise<StartedTask> {
  // Clamped, not refused: the schema allows 24 h, the deployment may allow less.
  const timeoutMs = Math.min(
    args.timeout_ms ?? deps.limits.taskTimeoutMaxMs,
    deps.limits.taskTimeoutMaxMs,
  );
  const lease = await sandboxFor(deps, ctx, args.session_id);
  let started = false;
  try {
    const { base, options } = await prepareCommand(deps, lease.sandbox, ctx.project, args, ctx);
    const taskId = randomUUID();
    // The head is written before the process exists: it is the task's slot in the project's
    // quota of running tasks (counted in Postgres over every instance), so a refused task never
    // runs a byte. Its pid follows once spawned; the reaper gives a head without a process a few
    // scans before it calls it orphaned.
    admitted(
      await deps.store.quotas.insertTask(
        {
          taskId,
          projectId: ctx.project,
          agentId: ctx.agentId ?? null,
          toolCallId: ctx.toolCallId,
          sandboxId: lease.sandbox.id,
          sessionKey: lease.sessionKey,
          command: args.command,
          ownerInstance: deps.instanceId,
          pid: null,
          procStartTime: null,
          startedAt: new Date(),
        },
        deps.quotas.runningTasksPerProject,
      ),
    );
    let proc: BackgroundProcess;
    try {
      // No signal: the task outlives this call; only its own limit or a cancel ends it.
      proc = await lease.sandbox.spawn({ shell: args.command }, { ...options, timeoutMs });
    } catch (err) {
      await deps.store.skillTasks
        .discard(taskId)
        .catch((e: unknown) => ctx.logger.warn({ err: e }, 'discarding the task head failed'));
      throw err;
    }
    try {
      await deps.store.skillTasks.setProcess(taskId, {
        pid: proc.pid,
        procStartTime: proc.procStartTime ?? null,
        startedAt: proc.startedAt,
      });
    } catch (err) {
      // Without its process in the head nobody could cancel it: it must not run.
      await proc.kill();
      await deps.store.skillTasks
        .finish(taskId, {
          ...emptyFinal,
          error: { code: 'internal_error', message: 'recording the task process failed' },
        })
        .catch((e: unknown) => ctx.logger.warn({ err: e }, 'ending the task head failed'));
      throw err;
    }
    started = true;
    // The task goes on alone: other calls may use the session beside it.
    await lease
      .detach()
      .catch((err: unknown) => ctx.logger.warn({ err }, 'unlocking the session failed'));
    const task: OwnTask = {
      project: ctx.project,
      process: proc,
      kill: async () => {
        await proc.kill();
      },
      canceled: false,
      done: Promise.resolve(),
      onEnd: undefined,
    };
    registry.running.set(taskId, task);
    task.done = finishTask(deps, ctx, lease, task, taskId, {
      outputs: args.outputs ?? [],
      base,
      timeoutMs,
    }).finally(() => registry.running.delete(taskId));
    ctx.logger.info({ task_id: taskId, pid: proc.pid }, 'task started');
    return {
      taskId,
      task,
      sandbox: lease.sandbox,
      result: {
        task_id: taskId,
        status: 'running',
        started_at: proc.startedAt.toISOString(),
        timeout_ms: timeoutMs,
      },
    };
  } finally {
    if (!started) {
      await lease
        .release()
        .catch((err: unknown) => ctx.logger.warn({ err }, 'releasing the sandbox failed'));
    }
  }
}

/**
 * Waits for the process, collects outputs, writes the final head and releases the sandbox.
 * Never rejects: a failure is logged and, where possible, written into the head.
 */
async function finishTask(
  deps: SkillsDeps,
  ctx: ToolContext,
  lease: Lease,
  task: OwnTask,
  taskId: string,
  o: { outputs: readonly string[]; base: string; timeoutMs: number },
): Promise<void> {
  const log = ctx.logger.child({ task_id: taskId });
  let final: FinishSkillTask;
  try {
    const r = await task.process.wait();
    await task.onEnd?.().catch((err: unknown) => log.warn({ err }, 'ending the task failed'));
    final = finalOf(r, o.timeoutMs);
    // A cancel sets the flag before it kills the process, so the kill reads as `canceled`.
    if (task.canceled && final.status !== 'timeout') {
      final = { ...final, status: 'canceled', error: null };
    }
    if (final.status === 'succeeded' || final.status === 'failed') {
      try {
        const c = await collectOutputs(
          deps,
          lease.sandbox,
          ctx.project,
          ctx.toolCallId,
          o.outputs,
          o.base,
        );
        final.artifacts = c.artifacts;
        final.outputErrors = c.errors;
      } catch (err) {
        final.status = 'failed';
        final.error = { code: 'tool_error', message: `collecting outputs failed: ${String(err)}` };
      }
    }
  } catch (err) {
    final = {
      ...emptyFinal,
      status: 'failed',
      error: { code: 'internal_error', message: `waiting for the task failed: ${String(err)}` },
    };
  }
  try {
    await deps.store.skillTasks.finish(taskId, final);
    log.info({ status: final.status, exit_code: final.exitCode }, 'task finished');
  } catch (err) {
    // The head stays `running`; the reaper turns it `orphaned` once the process is gone.
    log.error({ err }, 'writing the final task head failed');
  }
  await lease.release().catch((err: unknown) => log.warn({ err }, 'releasing the sandbox failed'));
}

const emptyFinal: FinishSkillTask = {
  status: 'failed',
  exitCode: null,
  signal: null,
  stdoutTail: '',
  stderrTail: '',
  stdoutTruncated: false,
  stderrTruncated: false,
  artifacts: [],
  outputErrors: [],
  error: null,
};

function finalOf(r: ExecResult, timeoutMs: number): FinishSkillTask {
  const base: FinishSkillTask = {
    ...emptyFinal,
    exitCode: r.exitCode,
    signal: r.signal,
    stdoutTail: r.stdout.text,
    stderrTail: r.stderr.text,
    stdoutTruncated: r.stdout.truncated,
    stderrTruncated: r.stderr.truncated,
  };
  const limit = limitErrorOf(r);
  if (limit !== undefined) {
    return { ...base, status: 'failed', error: { code: limit.code, message: limit.message } };
  }
  if (r.timedOut) {
    return {
      ...base,
      status: 'timeout',
      error: {
        code: 'timeout',
        message: `the task ran past its time limit of ${timeoutMs} ms and was killed`,
      },
    };
  }
  if (r.canceled) return { ...base, status: 'canceled' };
  return { ...base, status: r.exitCode === 0 ? 'succeeded' : 'failed' };
}
