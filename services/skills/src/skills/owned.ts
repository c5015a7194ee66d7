// What the task and job tools share: reading a head scoped by project (another project's id
// reads as unknown), asking the owning instance to cancel over `ctl.task.skills.cancel`, and
// the watch loop that polls a head and heartbeats on `evt.tool.skills.progress` until it ends.
import { setTimeout as sleep } from 'node:timers/promises';
import { encodeMessage, ToolError } from '@toolmesh/protocol';
import type { ToolContext } from '@toolmesh/tool-service';
import type { SkillsStore } from '@toolmesh/store';
import type { SkillsDeps } from './deps.ts';

export const OWNED_TARGET = 'skills';

export const TERMINAL = new Set<string>(['succeeded', 'failed', 'timeout', 'canceled', 'orphaned']);

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

/**
 * The head of a task or job of this project. An id of another project, or one that is nothing
 * at all, is the same `tool_error` with details `{reason: 'not_found'}`: nothing tells the
 * caller that the id exists elsewhere. (The protocol has no `not_found` code; we add none.)
 */
export async function scopedHead<H>(
  kind: 'task' | 'job',
  id: string,
  read: (id: string) => Promise<H | undefined>,
): Promise<H> {
  const head = UUID.test(id) ? await read(id) : undefined;
  if (!head) {
    throw new ToolError(`no ${kind} ${id} in this project`, {
      details: { reason: 'not_found', [`${kind}_id`]: id },
    });
  }
  return head;
}

/** How long the owner has to kill the process and write its head. */
export const CANCEL_REPLY_MS = 15_000;

/**
 * Asks every instance to cancel `id` (a task or job id: one uuid space, one subject); the one
 * holding it kills the process group, writes the final head and only then answers. False when
 * nobody answered in time: the caller reads the head to decide.
 */
export async function requestCancel(
  deps: SkillsDeps<SkillsStore>,
  ctx: ToolContext,
  id: string,
): Promise<boolean> {
  const subject = deps.bus.subjects.taskCancel({
    project: ctx.project,
    channel: ctx.channel,
    target: OWNED_TARGET,
  });
  try {
    await deps.bus.nc.request(subject, encodeMessage('task_cancel', { v: 1, task_id: id }), {
      timeout: Math.max(1, Math.min(CANCEL_REPLY_MS, ctx.deadline - Date.now() - 1_000)),
    });
    return true;
  } catch (err) {
    // No responders or no answer: the owner is gone or busy.
    ctx.logger.warn({ err, id }, 'no instance answered the cancel');
    return false;
  }
}

const DEFAULT_WATCH_MS = 30_000;
const DEFAULT_HEARTBEAT_MS = 5_000;
const POLL_MS = 250;
/** Kept back from the call's deadline to read the head once more and write the result. */
export const FINISH_MARGIN_MS = 1_000;
export const WATCH_MAX_MS = 3_600_000;

export interface WatchOptions<H> {
  read(): Promise<H>;
  status(head: H): string;
  /** The heartbeat's detail. */
  detail(head: H): Record<string, unknown>;
  timeoutMs: number | undefined;
  heartbeatMs: number | undefined;
}

/**
 * Polls a head until it ends or the watch's time passes, publishing heartbeats beside the
 * call's result (never in its slot). It only polls Postgres and sleeps, so a long watch holds
 * one of the runtime's concurrent slots and nothing else.
 */
export async function watchHead<H>(
  deps: SkillsDeps<SkillsStore>,
  ctx: ToolContext,
  o: WatchOptions<H>,
): Promise<{ head: H; timedOut: boolean }> {
  let head = await o.read();
  const until = Math.min(
    Date.now() + (o.timeoutMs ?? DEFAULT_WATCH_MS),
    ctx.deadline - FINISH_MARGIN_MS,
  );
  const every = o.heartbeatMs ?? DEFAULT_HEARTBEAT_MS;
  const subject = deps.bus.subjects.toolProgress({
    project: ctx.project,
    channel: ctx.channel,
    target: OWNED_TARGET,
  });
  let nextBeat = Date.now() + every;
  while (!TERMINAL.has(o.status(head)) && Date.now() < until) {
    await sleep(Math.max(0, Math.min(POLL_MS, until - Date.now())), undefined, {
      signal: ctx.signal,
    });
    head = await o.read();
    if (Date.now() >= nextBeat && !TERMINAL.has(o.status(head))) {
      nextBeat += every;
      deps.bus.publishCore(
        subject,
        encodeMessage('tool_progress', {
          v: 1,
          tool_call_id: ctx.toolCallId,
          tool_name: ctx.toolName,
          at: new Date().toISOString(),
          detail: o.detail(head),
        }),
      );
    }
  }
  return { head, timedOut: !TERMINAL.has(o.status(head)) };
}
