// What moves a turn besides its steps: inbox rows (a new task starts a turn; a tool result its
// card statement could not apply is reported, see calls/results.ts) and deadlines (a call nobody
// answered in time becomes a timeout result). Both lock the turn before touching its calls, the
// same order every other turn write uses.
import type { ToolResultContent } from '@toolmesh/protocol';
import type { Db } from '../core/db.ts';
import type { AppliedInbox, StartedTurn, TimedOutCall } from './turn-records.ts';

export type { AppliedInbox, StartedTurn, TimedOutCall } from './turn-records.ts';
import { lockThreadOf } from './thread-queue.ts';
import { insertCard } from './turn-cards.ts';
import {
  APPLY_INBOX,
  CALLS_PAST_DEADLINE,
  CALL_TIMEOUT,
  LOCK_TURN,
  PAST_DEADLINE,
  READY_IF_ANSWERED,
} from './turn-statements.ts';

/**
 * After a turn of a thread ended (in the same transaction): the thread's next message starts
 * (migration 0027, state.start_next_of_thread), under the thread's lock.
 */
export async function startNextOfThread(
  tx: Db,
  projectId: string,
  agentId: string,
  endedTaskId: string,
): Promise<StartedTurn | undefined> {
  const thread = await lockThreadOf(tx, projectId, endedTaskId);
  if (!thread) return undefined;
  const [next] = await tx.query<{ task_id: string; turn_id: string; channel: string }>(
    'thread_start_next',
    'SELECT task_id, turn_id, channel FROM state.start_next_of_thread($1, $2, $3)',
    [projectId, agentId, thread.thread_id],
  );
  return next && { taskId: next.task_id, turnId: next.turn_id, channel: next.channel };
}

async function readyIfAnswered(tx: Db, turnId: string, epoch: number): Promise<boolean> {
  const rows = await tx.query('turns_ready_if_answered', READY_IF_ANSWERED, [turnId, epoch]);
  return rows.length === 1;
}

/** Applies the agent's pending inbox rows in one round trip (state.apply_inbox, migration 0044). */
export async function applyInbox(
  db: Db,
  projectId: string,
  agentId: string,
  instanceId: string,
): Promise<AppliedInbox> {
  const [row] = await db.query<{ applied: AppliedInbox }>('turns_apply_inbox', APPLY_INBOX, [
    projectId,
    agentId,
    instanceId,
  ]);
  return row!.applied;
}

export async function fireDeadlines(
  db: Db,
  graceMs: number,
  author: string,
  limit: number,
): Promise<TimedOutCall[]> {
  const turns = await db.query<{ turn_id: string }>('turns_past_deadline', PAST_DEADLINE, [
    graceMs,
    limit,
  ]);
  const out: TimedOutCall[] = [];
  for (const { turn_id } of turns) {
    const fired = await db.tx(async (tx) => {
      const [turn] = await tx.query<{
        project_id: string;
        agent_id: string;
        channel: string;
        task_id: string;
        epoch: number;
      }>('turns_lock_scope', LOCK_TURN, [turn_id]);
      if (!turn) return [];
      const calls = await tx.query<{
        tool_call_id: string;
        tool_name: string;
        deadline_ms: number;
      }>('turns_calls_past_deadline', CALLS_PAST_DEADLINE, [turn_id, graceMs]);
      for (const c of calls) {
        const content: ToolResultContent = {
          status: 'timeout',
          error: {
            code: 'timeout',
            message: `${c.tool_name} gave no result within its deadline of ${c.deadline_ms} ms`,
          },
          duration_ms: c.deadline_ms + graceMs,
        };
        // A message card, not a tool.result: the call's one result slot stays the tool's own, so
        // a late real result is still recorded (and ignored by this turn, whose epoch moved on).
        const [card] = await insertCard(tx, {
          projectId: turn.project_id,
          kind: 'message',
          toolCallId: c.tool_call_id,
          author,
          content: { role: 'tool', ...content },
          metadata: { task_id: turn.task_id, deadline: true },
        });
        await tx.query('turns_call_timeout', CALL_TIMEOUT, [
          turn.project_id,
          c.tool_call_id,
          card!.card_id,
        ]);
      }
      await readyIfAnswered(tx, turn_id, turn.epoch);
      return calls.map((c) => ({
        project_id: turn.project_id,
        agent_id: turn.agent_id,
        channel: turn.channel,
        turn_id,
        ...c,
      }));
    });
    out.push(...fired);
  }
  return out;
}
