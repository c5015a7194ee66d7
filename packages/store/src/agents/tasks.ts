// Agent tasks (state.tasks): work handed to an agent over the api. A task is created pending
// together with its inbox row (inbox.ts) in one transaction; the agent worker moves it on and
// links its final card.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';
import { cancelTask, type CancelTaskOutcome } from './task-cancel.ts';
import type { Task } from './task-record.ts';

export { TaskState } from './task-record.ts';
export type { Task } from './task-record.ts';

export interface NewTask {
  projectId: string;
  agentId: string;
  channel: string;
  /** Any JSON value; a string stays a string. */
  input: unknown;
  /** A chosen id (a schedule derives one from its tick); a fresh UUIDv7 by default. */
  taskId?: string;
  traceparent?: string | undefined;
  keyId?: string | undefined;
  /** A message of a thread: the thread and the message's number in it. */
  thread?: { threadId: string; seq: number } | undefined;
}

export interface TasksRepo {
  /** Undefined when the agent does not exist in the project. */
  create(t: NewTask): Promise<Task | undefined>;
  /**
   * Creates the task and files it in its agent's inbox (payload as inbox.addTask), in one
   * statement; undefined when the agent does not exist in the project.
   */
  createInInbox(t: NewTask, payload: Record<string, unknown>): Promise<Task | undefined>;
  get(projectId: string, taskId: string): Promise<Task | undefined>;
  /** Ends a pending or running task `canceled` (see task-cancel.ts). */
  cancel(
    projectId: string,
    taskId: string,
    reason: string,
    author: string,
  ): Promise<CancelTaskOutcome>;
}

const COLUMNS = `task_id, project_id, agent_id, channel, input, status, final_card_id, error,
  created_at, updated_at, traceparent, key_id, thread_id, thread_seq`;

// Inserting from the agent row makes "unknown agent" an empty result rather than a foreign key
// violation to decode.
const INSERT_TASK = `INSERT INTO state.tasks (task_id, project_id, agent_id, channel, input,
                                              traceparent, key_id, thread_id, thread_seq)
  SELECT $1, project_id, agent_id, $4, $5::jsonb, $6, $7, $8, $9 FROM resource.agents
  WHERE project_id = $2 AND agent_id = $3
  RETURNING ${COLUMNS}`;

/** INSERT_TASK's parameters, $1-$9. */
const taskParams = (t: NewTask) => [
  t.taskId ?? uuidv7(),
  t.projectId,
  t.agentId,
  t.channel,
  // Always serialized: pg would send a bare string as invalid JSON and an array as a Postgres
  // array.
  JSON.stringify(t.input),
  t.traceparent ?? null,
  t.keyId ?? null,
  t.thread?.threadId ?? null,
  t.thread?.seq ?? null,
];

export function createTasksRepo(db: Db): TasksRepo {
  return {
    cancel: (projectId, taskId, reason, author) =>
      cancelTask(db, projectId, taskId, reason, author),
    create: async (t) => (await db.query<Task>('tasks_create', INSERT_TASK, taskParams(t)))[0],
    createInInbox: async (t, payload) =>
      (
        await db.query<Task>(
          'tasks_create_in_inbox',
          `WITH task AS (${INSERT_TASK}),
           inbox AS (
             INSERT INTO state.agent_inbox
               (inbox_id, project_id, agent_id, message_type, correlation_id, payload)
             SELECT $10, project_id, agent_id, 'task', task_id::text, $11::jsonb FROM task
             ON CONFLICT (project_id, message_type, md5(correlation_id)) DO NOTHING)
           SELECT ${COLUMNS} FROM task`,
          [...taskParams(t), uuidv7(), JSON.stringify(payload)],
        )
      )[0],
    get: async (projectId, taskId) =>
      (
        await db.query<Task>(
          'tasks_get',
          `SELECT ${COLUMNS} FROM state.tasks WHERE project_id = $1 AND task_id = $2`,
          [projectId, taskId],
        )
      )[0],
  };
}
