// What moves a suspended turn: inbox rows (a new task starts a turn, a tool result answers one
// of its calls) and deadlines (a call nobody answered in time becomes a timeout result). Both
// lock the turn before touching its calls, the same order every other turn write uses.
import type { ToolResultContent } from '@toolmesh/protocol';
import type { Db } from '../core/db.ts';
import type { AppliedInbox, StartedTurn, TimedOutCall } from './turn-records.ts';

export type { AppliedInbox, StartedTurn, TimedOutCall } from './turn-records.ts';
import { lockThreadOf } from './thread-queue.ts';
import { insertCard } from './turn-cards.ts';

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
  const rows = await tx.query(
    'turns_ready_if_answered',
    `UPDATE state.turns SET status = 'ready', updated_at = now()
     WHERE turn_id = $1 AND status = 'waiting' AND epoch = $2
       AND NOT EXISTS (SELECT 1 FROM state.turn_calls
                       WHERE turn_id = $1 AND epoch = $2 AND status = 'pending')
     RETURNING 1`,
    [turnId, epoch],
  );
  return rows.length === 1;
}

/** Applies the agent's pending inbox rows in one round trip (see migration 0027). */
export async function applyInbox(
  db: Db,
  projectId: string,
  agentId: string,
  instanceId: string,
): Promise<AppliedInbox> {
  const [row] = await db.query<{ applied: AppliedInbox }>(
    'turns_apply_inbox',
    'SELECT state.apply_inbox($1, $2, $3) AS applied',
    [projectId, agentId, instanceId],
  );
  return row!.applied;
}

export async function fireDeadlines(
  db: Db,
  graceMs: number,
  author: string,
  limit: number,
): Promise<TimedOutCall[]> {
  const turns = await db.query<{ turn_id: string }>(
    'turns_past_deadline',
    `SELECT DISTINCT turn_id FROM state.turn_calls
     WHERE status = 'pending' AND deadline_at < now() - make_interval(secs => $1::float8 / 1000)
     LIMIT $2`,
    [graceMs, limit],
  );
  const out: TimedOutCall[] = [];
  for (const { turn_id } of turns) {
    const fired = await db.tx(async (tx) => {
      const [turn] = await tx.query<{
        project_id: string;
        agent_id: string;
        channel: string;
        task_id: string;
        epoch: number;
      }>(
        'turns_lock_scope',
        `SELECT project_id, agent_id, channel, task_id, epoch FROM state.turns
         WHERE turn_id = $1 FOR UPDATE`,
        [turn_id],
      );
      if (!turn) return [];
      const calls = await tx.query<{
        tool_call_id: string;
        tool_name: string;
        deadline_ms: number;
      }>(
        'turns_calls_past_deadline',
        `SELECT tool_call_id, tool_name, deadline_ms FROM state.turn_calls
         WHERE turn_id = $1 AND status = 'pending'
           AND deadline_at < now() - make_interval(secs => $2::float8 / 1000)`,
        [turn_id, graceMs],
      );
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
        await tx.query(
          'turns_call_timeout',
          `UPDATE state.turn_calls SET status = 'timeout', result_card_id = $3
           WHERE project_id = $1 AND tool_call_id = $2`,
          [turn.project_id, c.tool_call_id, card!.card_id],
        );
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
