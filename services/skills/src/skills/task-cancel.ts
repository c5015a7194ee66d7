// skills.task_cancel: from any instance. A task already ended is reported as it is, nothing
// killed. A running one gets a core NATS request on `ctl.task.skills.cancel`; the instance that
// holds the process kills its whole group, writes the head `canceled` and only then answers, so
// the head read afterwards is final.
import { ToolError } from '@toolmesh/protocol';
import { TaskRef } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';
import { CANCEL_REPLY_MS, requestCancel } from './owned.ts';
import { headOf, TERMINAL, viewOf } from './tasks.ts';

export function taskCancelTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'task_cancel',
    description:
      'Cancels an async task, killing every process it started; returns its final state.',
    args: TaskRef,
    timeoutMs: CANCEL_REPLY_MS + 5_000,
    handler: async (args, ctx) => {
      const head = await headOf(deps, ctx.project, args.task_id);
      if (TERMINAL.has(head.status)) return { ...viewOf(head), canceled: false };
      const answered = await requestCancel(deps, ctx, head.task_id);
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
