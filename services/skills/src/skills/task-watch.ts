// skills.task_watch: waits until an async task ends or the watch's own time passes, and returns
// the head as the call's one result. While it waits it publishes heartbeats on
// `evt.tool.skills.progress` (a ToolProgressEvent): beside the result, never in its slot. It
// only polls Postgres and sleeps, so a long watch holds one of the runtime's concurrent slots
// and nothing else: other calls keep being served.
import { TaskWatchArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';
import { FINISH_MARGIN_MS, WATCH_MAX_MS, watchHead } from './owned.ts';
import { headOf, viewOf } from './tasks.ts';

export function taskWatchTool(deps: SkillsDeps<SkillsStore>) {
  return defineTool({
    name: 'task_watch',
    description:
      'Waits for an async task to end (or for timeout_ms), sending heartbeats meanwhile; returns its state.',
    args: TaskWatchArgs,
    timeoutMs: WATCH_MAX_MS + FINISH_MARGIN_MS,
    handler: async (args, ctx) => {
      const { head, timedOut } = await watchHead(deps, ctx, {
        read: () => headOf(deps, ctx.project, args.task_id),
        status: (h) => h.status,
        detail: (h) => ({ task_id: h.task_id, status: h.status }),
        timeoutMs: args.timeout_ms,
        heartbeatMs: args.heartbeat_ms,
      });
      return { ...viewOf(head), watch_timed_out: timedOut };
    },
  });
}
