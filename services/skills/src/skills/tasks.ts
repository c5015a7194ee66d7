// Async tasks on this instance: the processes it started for skills.run_cmd_async, and the
// cancel listener that lets any instance end them. The durable head is in Postgres
// (state.skill_tasks); this map only holds what cannot be shared, the process handle. Every
// skills instance subscribes to the task cancel subject (no queue group): the one that holds
// the task kills it, writes the head and answers; the others stay silent.
import type { Msg, Subscription } from '@nats-io/transport-node';
import { subscribeGuarded } from '@toolmesh/bus';
import { decodeMessage } from '@toolmesh/protocol';
import type { SkillsStore, SkillTaskRecord } from '@toolmesh/store';
import type { ToolDefinition } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { OWNED_TARGET, scopedHead } from './owned.ts';
import { runCmdAsyncTool } from './run-cmd-async.ts';
import { runServiceTool } from './run-service.ts';
import { taskCancelTool } from './task-cancel.ts';
import { taskStatusTool } from './task-status.ts';
import { taskWatchTool } from './task-watch.ts';

export const TASK_TARGET = OWNED_TARGET;
export { TERMINAL } from './owned.ts';

export interface RunningTask {
  readonly project: string;
  /** Kills whatever runs (a job: its current step); called after `canceled` is set. */
  kill(): Promise<void>;
  /** Set before the process is killed by a cancel, so the finisher writes `canceled`. */
  canceled: boolean;
  /** Resolves once the final head is written (or writing it failed); set right after start. */
  done: Promise<void>;
}

export interface TaskRegistry {
  readonly running: Map<string, RunningTask>;
  /** Starts listening for cancels; idempotent. */
  listen(): void;
}

export function createTaskRegistry(deps: SkillsDeps<SkillsStore>): TaskRegistry {
  const running = new Map<string, RunningTask>();
  const log = deps.logger.child({ component: 'skill-tasks' });
  let sub: Subscription | undefined;
  const onCancel = async (msg: Msg) => {
    const parsed = deps.bus.subjects.parse(msg.subject);
    const req = decodeMessage('task_cancel', msg.data);
    const task = running.get(req.task_id);
    // Not ours, or (defence in depth) a task id sent under another project's subject.
    if (!task || task.project !== parsed.project) return;
    log.info({ task_id: req.task_id, reason: req.reason }, 'canceling task');
    task.canceled = true;
    await task.kill();
    await task.done;
    msg.respond();
  };
  return {
    running,
    listen: () => {
      sub ??= subscribeGuarded(deps.bus.nc, deps.bus.subjects.taskCancelFilter(TASK_TARGET), {
        log,
        onMessage: (msg) => {
          onCancel(msg).catch((e: unknown) =>
            log.warn({ err: e, subject: msg.subject }, 'ignoring a task cancel that failed'),
          );
        },
      });
    },
  };
}

/** The head of a task of this project; see scopedHead for ids of other projects. */
export const headOf = (deps: SkillsDeps<SkillsStore>, project: string, taskId: string) =>
  scopedHead('task', taskId, (id) => deps.store.skillTasks.get(project, id));

/** What the task tools return: the head without the instance-private fields (owner, pid). */
export function viewOf(h: SkillTaskRecord) {
  const end = h.finished_at ?? new Date();
  return {
    task_id: h.task_id,
    status: h.status,
    command: h.command,
    sandbox_id: h.sandbox_id,
    started_at: h.started_at.toISOString(),
    finished_at: h.finished_at?.toISOString() ?? null,
    duration_ms: Math.max(0, end.getTime() - h.started_at.getTime()),
    exit_code: h.exit_code,
    signal: h.signal,
    stdout: h.stdout_tail ?? '',
    stderr: h.stderr_tail ?? '',
    stdout_truncated: h.stdout_truncated,
    stderr_truncated: h.stderr_truncated,
    artifacts: h.artifacts,
    output_errors: h.output_errors,
    error: h.error,
  };
}

/** The task tools (run_cmd_async, run_service, status, watch, cancel), sharing this instance's registry of running tasks. */
export function taskTools(deps: SkillsDeps): ToolDefinition[] {
  const registry = createTaskRegistry(deps);
  registry.listen();
  return [
    runCmdAsyncTool(deps, registry),
    runServiceTool(deps, registry),
    taskStatusTool(deps),
    taskWatchTool(deps),
    taskCancelTool(deps),
  ] as ToolDefinition[];
}
