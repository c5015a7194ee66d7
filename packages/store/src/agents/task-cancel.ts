// Canceling an agent task. The turn is locked first (the order every turn write uses), then its
// task: a running step loses its lease (its run token is cleared, so its later writes are
// fenced and its lease renewal fails), the calls it waits on are marked canceled (the scan then
// neither fires their deadlines nor republishes them), and a `final` card says the task was
// canceled. The caller publishes a cancel for each returned call, wherever it runs.
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';
import type { Task } from './task-record.ts';
import { lockThreadOf } from './thread-queue.ts';
import { startNextOfThread, type StartedTurn } from './turn-events.ts';
import { insertCard } from './turn-cards.ts';

export interface CanceledCall {
  tool_call_id: string;
  tool_name: string;
}

export type CancelTaskOutcome =
  | { kind: 'not_found' }
  /** The task had already ended; nothing changed. */
  | { kind: 'finished'; status: string }
  | {
      kind: 'canceled';
      task: Pick<Task, 'task_id' | 'agent_id' | 'channel'>;
      card: Card;
      calls: CanceledCall[];
      /** The turn of the thread's next message, started by this turn's end. */
      next: StartedTurn | undefined;
    };

export async function cancelTask(
  db: Db,
  projectId: string,
  taskId: string,
  reason: string,
  author: string,
): Promise<CancelTaskOutcome> {
  return db.tx(async (tx) => {
    // The thread (if any) before the turn: the order every path that ends a thread's turn uses.
    await lockThreadOf(tx, projectId, taskId);
    const [turn] = await tx.query<{ turn_id: string; step: number }>(
      'task_cancel_lock_turn',
      `SELECT turn_id, step FROM state.turns WHERE project_id = $1 AND task_id = $2 FOR UPDATE`,
      [projectId, taskId],
    );
    const [task] = await tx.query<{ agent_id: string; channel: string; status: string }>(
      'task_cancel_lock_task',
      `SELECT agent_id, channel, status FROM state.tasks
       WHERE project_id = $1 AND task_id = $2 FOR UPDATE`,
      [projectId, taskId],
    );
    if (!task) return { kind: 'not_found' };
    if (task.status !== 'pending' && task.status !== 'running')
      return { kind: 'finished', status: task.status };
    const [card] = await insertCard(tx, {
      projectId,
      kind: 'final',
      author,
      content: { status: 'canceled', error: { code: 'canceled', message: reason } },
      metadata: { task_id: taskId, ...(turn ? { turn_id: turn.turn_id, step: turn.step } : {}) },
    });
    let calls: CanceledCall[] = [];
    if (turn) {
      await tx.query(
        'task_cancel_turn',
        `UPDATE state.turns SET status = 'canceled', run_token = NULL, run_owner = NULL,
           lease_until = NULL, updated_at = now() WHERE turn_id = $1`,
        [turn.turn_id],
      );
      calls = await tx.query<CanceledCall>(
        'task_cancel_calls',
        `UPDATE state.turn_calls SET status = 'canceled'
         WHERE turn_id = $1 AND status = 'pending' RETURNING tool_call_id, tool_name`,
        [turn.turn_id],
      );
    }
    await tx.query(
      'task_cancel_task',
      `UPDATE state.tasks SET status = 'canceled', final_card_id = $3, error = $4, updated_at = now()
       WHERE project_id = $1 AND task_id = $2`,
      [projectId, taskId, card!.card_id, JSON.stringify({ code: 'canceled', message: reason })],
    );
    // The thread's next message waited for the turn that just ended.
    const next = turn ? await startNextOfThread(tx, projectId, task.agent_id, taskId) : undefined;
    return {
      kind: 'canceled',
      task: { task_id: taskId, agent_id: task.agent_id, channel: task.channel },
      card: card!,
      calls,
      next,
    };
  });
}
