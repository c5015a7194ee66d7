// Threads (state.threads): conversations with one agent. A message is an agent task of the
// thread (tasks.ts, with thread_id and thread_seq), filed with its inbox row like any task; the
// order its turn starts in is kept by thread-queue.ts. This module opens threads, numbers their
// messages, and reads a thread's turns back with their cards, for the api and for the prompt of
// the thread's next turn.
import { v7 as uuidv7 } from 'uuid';
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';
import type { TaskState } from './task-record.ts';
import { CARD_COLUMNS, shownCard } from './turn-cards.ts';
import type { Conversation, TurnCallRecord, TurnStatus } from './turns.ts';

export interface Thread {
  thread_id: string;
  project_id: string;
  agent_id: string;
  channel: string;
  title: string | null;
  /** Messages sent to the thread so far (the last message's seq). */
  messages: number;
  created_at: Date;
  updated_at: Date;
}

export interface NewThread {
  projectId: string;
  agentId: string;
  channel: string;
  title?: string | undefined;
}

/** One message of a thread and the turn that answers it (none while the message waits). */
export interface ThreadTurn {
  task_id: string;
  seq: number;
  input: unknown;
  status: TaskState;
  error: Record<string, unknown> | null;
  created_at: Date;
  updated_at: Date;
  turn: { turn_id: string; status: TurnStatus; step: number } | null;
  /** The final card: the answer, or why the turn failed or was canceled. */
  final: Card | null;
  /** The turn's cards (its input, the model's messages and calls) and each call's result. */
  conversation: Conversation;
}

export type NextMessage =
  | { kind: 'not_found' }
  /** As many messages wait already as the thread may queue. */
  | { kind: 'full'; waiting: number }
  | { kind: 'numbered'; seq: number; channel: string };

export interface ThreadTurnsQuery {
  /** Only messages numbered below this one. */
  beforeSeq?: number | undefined;
  /** The newest this many of them. */
  limit: number;
  /** Also the thread's first message, when the limit leaves it out. */
  withFirst?: boolean | undefined;
}

export interface ThreadsRepo {
  /** Undefined when the agent does not exist in the project. */
  create(t: NewThread): Promise<Thread | undefined>;
  get(projectId: string, agentId: string, threadId: string): Promise<Thread | undefined>;
  /** The agent's threads, newest first; `before` is the last thread id of the previous page. */
  list(projectId: string, agentId: string, limit: number, before?: string): Promise<Thread[]>;
  /**
   * Numbers the thread's next message (call inside the transaction that files its task): the
   * thread row stays locked until then, so numbers follow the order messages were accepted.
   */
  nextMessage(
    projectId: string,
    agentId: string,
    threadId: string,
    maxWaiting: number,
  ): Promise<NextMessage>;
  /** The thread's messages and their turns, oldest first. */
  turns(projectId: string, threadId: string, q: ThreadTurnsQuery): Promise<ThreadTurn[]>;
  /** The thread and place of a task, when it is a message of one. */
  placeOf(
    projectId: string,
    taskId: string,
  ): Promise<{ thread_id: string; seq: number } | undefined>;
}

const COLUMNS = `thread_id, project_id, agent_id, channel, title, messages, created_at, updated_at`;
const CALL = `tool_call_id, turn_id, epoch, seq, tool_name, arguments, status, deadline_ms,
  published_at, result_card_id`;

interface TurnRow {
  task_id: string;
  thread_seq: number;
  input: unknown;
  status: TaskState;
  error: Record<string, unknown> | null;
  final_card_id: string | null;
  created_at: Date;
  updated_at: Date;
  turn_id: string | null;
  turn_status: TurnStatus | null;
  step: number | null;
}

async function readTurns(
  db: Db,
  projectId: string,
  threadId: string,
  q: ThreadTurnsQuery,
): Promise<ThreadTurn[]> {
  const rows = await db.query<TurnRow>(
    'threads_turns',
    `WITH newest AS (
       SELECT task_id FROM state.tasks
       WHERE project_id = $1 AND thread_id = $2 AND ($3::int IS NULL OR thread_seq < $3)
       ORDER BY thread_seq DESC LIMIT $4)
     SELECT t.task_id, t.thread_seq, t.input, t.status, t.error, t.final_card_id, t.created_at,
            t.updated_at, u.turn_id, u.status AS turn_status, u.step
     FROM state.tasks t LEFT JOIN state.turns u ON u.task_id = t.task_id
     WHERE t.project_id = $1 AND t.thread_id = $2
       AND (t.task_id IN (SELECT task_id FROM newest)
            OR ($5 AND t.thread_seq = 1 AND ($3::int IS NULL OR $3 > 1)))
     ORDER BY t.thread_seq`,
    [projectId, threadId, q.beforeSeq ?? null, q.limit, q.withFirst ?? false],
  );
  return hydrate(db, projectId, rows);
}

async function hydrate(db: Db, projectId: string, rows: TurnRow[]): Promise<ThreadTurn[]> {
  const turnIds = rows.flatMap((r) => (r.turn_id ? [r.turn_id] : []));
  const cards = turnIds.length
    ? await db.query<Card>(
        'threads_turn_cards',
        `SELECT ${CARD_COLUMNS} FROM cards
         WHERE metadata ? 'turn_id' AND metadata->>'turn_id' = ANY($2::text[]) AND project_id = $1
         ORDER BY created_at, card_id`,
        [projectId, turnIds],
      )
    : [];
  const calls = turnIds.length
    ? await db.query<TurnCallRecord>(
        'threads_turn_calls',
        `SELECT ${CALL} FROM state.turn_calls WHERE turn_id = ANY($1::uuid[]) ORDER BY epoch, seq`,
        [turnIds],
      )
    : [];
  const wanted = [
    ...calls.flatMap((c) => (c.result_card_id ? [c.result_card_id] : [])),
    ...rows.flatMap((r) => (r.final_card_id ? [r.final_card_id] : [])),
  ];
  const linked = wanted.length
    ? await db.query<Card>(
        'threads_linked_cards',
        `SELECT ${CARD_COLUMNS} FROM cards WHERE project_id = $1 AND card_id = ANY($2::uuid[])`,
        [projectId, wanted],
      )
    : [];
  const byId = new Map(linked.map((c) => [c.card_id, c]));
  return rows.map((r) => {
    const own = r.turn_id
      ? cards.filter((c) => c.metadata['turn_id'] === r.turn_id).map(shownCard)
      : [];
    const ownCalls = calls.filter((c) => c.turn_id === r.turn_id);
    const results = new Map<string, Card>();
    for (const c of ownCalls) {
      const card = c.result_card_id ? byId.get(c.result_card_id) : undefined;
      if (card) results.set(c.tool_call_id, card);
    }
    return {
      task_id: r.task_id,
      seq: r.thread_seq,
      input: r.input,
      status: r.status,
      error: r.error,
      created_at: r.created_at,
      updated_at: r.updated_at,
      turn:
        r.turn_id && r.turn_status
          ? { turn_id: r.turn_id, status: r.turn_status, step: r.step ?? 0 }
          : null,
      final: r.final_card_id ? (byId.get(r.final_card_id) ?? null) : null,
      conversation: { cards: own, calls: ownCalls, results },
    };
  });
}

export function createThreadsRepo(db: Db): ThreadsRepo {
  return {
    create: async (t) =>
      (
        await db.query<Thread>(
          'threads_create',
          `INSERT INTO state.threads (thread_id, project_id, agent_id, channel, title)
           SELECT $1, project_id, agent_id, $4, $5 FROM resource.agents
           WHERE project_id = $2 AND agent_id = $3
           RETURNING ${COLUMNS}`,
          [uuidv7(), t.projectId, t.agentId, t.channel, t.title ?? null],
        )
      )[0],

    get: async (projectId, agentId, threadId) =>
      (
        await db.query<Thread>(
          'threads_get',
          `SELECT ${COLUMNS} FROM state.threads
           WHERE project_id = $1 AND agent_id = $2 AND thread_id = $3`,
          [projectId, agentId, threadId],
        )
      )[0],

    list: (projectId, agentId, limit, before) =>
      db.query<Thread>(
        'threads_list',
        `SELECT ${COLUMNS} FROM state.threads
         WHERE project_id = $1 AND agent_id = $2 AND ($4::uuid IS NULL OR thread_id < $4)
         ORDER BY thread_id DESC LIMIT $3`,
        [projectId, agentId, limit, before ?? null],
      ),

    nextMessage: async (projectId, agentId, threadId, maxWaiting) => {
      const [thread] = await db.query<{ channel: string }>(
        'threads_lock',
        `SELECT channel FROM state.threads
         WHERE project_id = $1 AND agent_id = $2 AND thread_id = $3 FOR UPDATE`,
        [projectId, agentId, threadId],
      );
      if (!thread) return { kind: 'not_found' };
      const [waiting] = await db.query<{ n: number }>(
        'threads_waiting',
        `SELECT count(*)::int AS n FROM state.tasks
         WHERE project_id = $1 AND thread_id = $2 AND status = 'pending'`,
        [projectId, threadId],
      );
      if ((waiting?.n ?? 0) >= maxWaiting) return { kind: 'full', waiting: waiting?.n ?? 0 };
      const [row] = await db.query<{ messages: number }>(
        'threads_number',
        `UPDATE state.threads SET messages = messages + 1, updated_at = now()
         WHERE project_id = $1 AND thread_id = $2 RETURNING messages`,
        [projectId, threadId],
      );
      return { kind: 'numbered', seq: row!.messages, channel: thread.channel };
    },

    turns: (projectId, threadId, q) => readTurns(db, projectId, threadId, q),

    placeOf: async (projectId, taskId) => {
      const [row] = await db.query<{ thread_id: string | null; thread_seq: number | null }>(
        'threads_place_of_task',
        `SELECT thread_id, thread_seq FROM state.tasks WHERE project_id = $1 AND task_id = $2`,
        [projectId, taskId],
      );
      return row?.thread_id && row.thread_seq !== null
        ? { thread_id: row.thread_id, seq: row.thread_seq }
        : undefined;
    },
  };
}
