// An agent task's row (state.tasks), shared by the tasks repository and the cancel of a task.

export const TaskState = {
  pending: 'pending',
  running: 'running',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
} as const;
export type TaskState = (typeof TaskState)[keyof typeof TaskState];

export interface Task {
  task_id: string;
  project_id: string;
  agent_id: string;
  channel: string;
  input: unknown;
  status: TaskState;
  final_card_id: string | null;
  error: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  /** The W3C trace context the task was created in, when traces are recorded. */
  traceparent: string | null;
  /** The API key that started the task (null for the admin key, a schedule or older tasks). */
  key_id: string | null;
  /** The thread the task is a message of (threads.ts), and its place there. */
  thread_id: string | null;
  thread_seq: number | null;
}
