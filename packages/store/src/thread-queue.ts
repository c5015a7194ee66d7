// The order of a thread's turns. A thread runs one turn at a time, its messages in the order
// they were sent: a message's turn starts only when no turn of the thread is unfinished, and
// then always the thread's oldest pending message (which may not be the one whose inbox row is
// being applied). Every path that starts or ends a thread's turn (applying the inbox, finishing
// a turn, canceling a task) locks the thread row first, so two of them cannot both see the
// thread idle and start two turns.
import type { Db } from './db.ts';

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

/** Locks the threads of these tasks, in thread id order (the order every batch uses). */
export async function lockThreadsOf(tx: Db, projectId: string, taskIds: string[]): Promise<void> {
  await tx.query(
    'thread_lock_of_tasks',
    `SELECT th.thread_id FROM state.threads th
     WHERE th.project_id = $1 AND th.thread_id IN (
       SELECT thread_id FROM state.tasks
       WHERE project_id = $1 AND task_id = ANY($2::uuid[]) AND thread_id IS NOT NULL)
     ORDER BY th.thread_id
     FOR UPDATE`,
    [projectId, taskIds],
  );
}

/**
 * The task whose turn may start now in a locked thread: its oldest pending message, or none
 * while a turn of the thread is unfinished (that message waits for it).
 */
export async function nextOfThread(
  tx: Db,
  projectId: string,
  threadId: string,
): Promise<string | undefined> {
  const [row] = await tx.query<{ task_id: string }>(
    'thread_next_task',
    `SELECT t.task_id FROM state.tasks t
     WHERE t.project_id = $1 AND t.thread_id = $2 AND t.status = 'pending'
       AND NOT EXISTS (
         SELECT 1 FROM state.tasks r JOIN state.turns u ON u.task_id = r.task_id
         WHERE r.project_id = $1 AND r.thread_id = $2
           AND u.status IN ('ready', 'running', 'waiting'))
     ORDER BY t.thread_seq LIMIT 1`,
    [projectId, threadId],
  );
  return row?.task_id;
}
