// skills.task_cancel: from any instance. A task already ended is reported as it is, nothing
// killed. A running one gets a core NATS request on `ctl.task.skills.cancel`; the instance that
// holds the process kills its whole group, writes the head `canceled` and only then answers, so
// the head read afterwards is final.
import { encodeMessage, ToolError } from '@toolmesh/protocol';
import { TaskRef } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { headOf, TASK_TARGET, TERMINAL, viewOf } from './tasks.ts';

/** How long the owner has to kill the task and write its head. */
const CANCEL_REPLY_MS = 15_000;

export function taskCancelTool(deps: SkillsDeps) {
  return defineTool({
    name: 'task_cancel',
    description:
      'Cancels an async task, killing every process it started; returns its final state.',
    args: TaskRef,
    timeoutMs: CANCEL_REPLY_MS + 5_000,
    handler: async (args, ctx) => {
      const head = await headOf(deps, ctx.project, args.task_id);
      if (TERMINAL.has(head.status)) return { ...viewOf(head), canceled: false };
      const subject = deps.bus.subjects.taskCancel({
        project: ctx.project,
        channel: ctx.channel,
        target: TASK_TARGET,
      });
      let answered = true;
      try {
        await deps.bus.nc.request(
          subject,
          encodeMessage('task_cancel', { v: 1, task_id: head.task_id }),
          { timeout: Math.max(1, Math.min(CANCEL_REPLY_MS, ctx.deadline - Date.now() - 1_000)) },
        );
      } catch (err) {
        // No responders or no answer: the owner is gone or busy. The head decides below.
        ctx.logger.warn({ err, task_id: head.task_id }, 'no instance answered the task cancel');
        answered = false;
      }
      const after = await headOf(deps, ctx.project, args.task_id);
      if (after.status === 'running') {
        throw new ToolError('the instance running the task did not confirm the cancel', {
          details: { reason: 'owner_unreachable', task_id: head.task_id },
        });
      }
      return { ...viewOf(after), canceled: answered && after.status === 'canceled' };
    },
  });
}
