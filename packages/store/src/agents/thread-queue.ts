// The order of a thread's turns. A thread runs one turn at a time, its messages in the order
// they were sent: a message's turn starts only when no turn of the thread is unfinished, and
// then always the thread's oldest pending message (which may not be the one whose inbox row is
// being applied). Every path that starts or ends a thread's turn (applying the inbox, finishing
// a turn, canceling a task) locks the thread row first, so two of them cannot both see the
// thread idle and start two turns. The choosing and starting live in SQL (migration 0027:
// state.apply_inbox, state.finish_turn, state.start_next_of_thread), one round trip each; this
// is the lock the cancel path takes from TypeScript.
import type { Db } from '../core/db.ts';

/** Locks the thread of a task; undefined when the task belongs to none. */
export async function lockThreadOf(
  tx: Db,
  projectId: string,
  taskId: string,
): Promise<{ thread_id: string } | undefined> {
  return (
    await tx.query<{ thread_id: string }>(
      'thread_lock_of_task',
      `SELECT th.thread_id FROM state.threads th
       JOIN state.tasks t ON t.project_id = th.project_id AND t.thread_id = th.thread_id
       WHERE t.project_id = $1 AND t.task_id = $2
       FOR UPDATE OF th`,
      [projectId, taskId],
    )
  )[0];
}
