// skills.task_watch: waits until an async task ends or the watch's own time passes, and returns
// the head as the call's one result. While it waits it publishes heartbeats on
// `evt.tool.skills.progress` (a ToolProgressEvent): beside the result, never in its slot. It
// only polls Postgres and sleeps, so a long watch holds one of the runtime's concurrent slots
// and nothing else: other calls keep being served.
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeMessage } from '@toolmesh/protocol';
import { TaskWatchArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { headOf, TASK_TARGET, TERMINAL, viewOf } from './tasks.ts';

const DEFAULT_WATCH_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 5_000;
const POLL_MS = 250;
/** Kept back from the call's deadline to read the head once more and write the result. */
const FINISH_MARGIN_MS = 1_000;
const HOUR_MS = 3_600_000;

export function taskWatchTool(deps: SkillsDeps) {
  return defineTool({
    name: 'task_watch',
    description:
      'Waits for an async task to end (or for timeout_ms), sending heartbeats meanwhile; returns its state.',
    args: TaskWatchArgs,
    timeoutMs: HOUR_MS + FINISH_MARGIN_MS,
    handler: async (args, ctx) => {
      let head = await headOf(deps, ctx.project, args.task_id);
      const until = Math.min(
        Date.now() + (args.timeout_ms ?? DEFAULT_WATCH_MS),
        ctx.deadline - FINISH_MARGIN_MS,
      );
      const every = args.heartbeat_ms ?? DEFAULT_HEARTBEAT_MS;
      const subject = deps.bus.subjects.toolProgress({
        project: ctx.project,
        channel: ctx.channel,
        target: TASK_TARGET,
      });
      let nextBeat = Date.now() + every;
      while (!TERMINAL.has(head.status) && Date.now() < until) {
        await sleep(Math.max(0, Math.min(POLL_MS, until - Date.now())), undefined, {
          signal: ctx.signal,
        });
        head = await headOf(deps, ctx.project, args.task_id);
        if (Date.now() >= nextBeat && !TERMINAL.has(head.status)) {
          nextBeat += every;
          deps.bus.publishCore(
            subject,
            encodeMessage('tool_progress', {
              v: 1,
              tool_call_id: ctx.toolCallId,
              tool_name: ctx.toolName,
              at: new Date().toISOString(),
              detail: { task_id: head.task_id, status: head.status },
            }),
          );
        }
      }
      return { ...viewOf(head), watch_timed_out: !TERMINAL.has(head.status) };
    },
  });
}
