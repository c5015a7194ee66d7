// What moves a suspended turn: inbox rows (a new task starts a turn, a tool result answers one
// of its calls) and deadlines (a call nobody answered in time becomes a timeout result). Both
// lock the turn before touching its calls, the same order every other turn write uses.
import { v7 as uuidv7 } from 'uuid';
import type { ToolResultContent } from '@toolmesh/protocol';
import type { Db } from './db.ts';
import { lockThreadOf, lockThreadsOf, nextOfThread } from './thread-queue.ts';
import { insertCard } from './turn-cards.ts';

export interface StartedTurn {
  taskId: string;
  turnId: string;
  channel: string;
}

export interface AppliedInbox {
  /** Turns started for new tasks. */
  started: StartedTurn[];
  /** Turns whose last awaited result arrived: a step is due. */
  resumed: string[];
  /** Rows that changed nothing (a stale epoch, a call already answered, no such turn). */
  ignored: { correlationId: string; reason: string }[];
  applied: number;
}

export interface TimedOutCall {
  project_id: string;
  agent_id: string;
  channel: string;
  turn_id: string;
  tool_call_id: string;
  tool_name: string;
  deadline_ms: number;
}

interface InboxRow {
  inbox_id: string;
  message_type: 'tool_result' | 'task';
  correlation_id: string;
  payload: { card_id?: string; turn_epoch?: number | null; channel?: string };
}

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

function userText(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input);
}

/**
 * Starts the turn of a pending task: the task runs, and its input becomes the turn's first
 * (user) card. Undefined when the task is not pending (started already, canceled, unknown).
 */
export async function startTaskTurn(
  tx: Db,
  projectId: string,
  agentId: string,
  taskId: string,
): Promise<StartedTurn | undefined> {
  const [task] = await tx.query<{ task_id: string; channel: string; input: unknown }>(
    'turns_task_for_start',
    `UPDATE state.tasks SET status = 'running', updated_at = now()
     WHERE project_id = $1 AND agent_id = $2 AND task_id = $3 AND status = 'pending'
     RETURNING task_id, channel, input`,
    [projectId, agentId, taskId],
  );
  if (!task) return undefined;
  const turnId = uuidv7();
  await tx.query(
    'turns_start',
    `INSERT INTO state.turns (turn_id, project_id, agent_id, channel, task_id)
     VALUES ($1, $2, $3, $4, $5)`,
    [turnId, projectId, agentId, task.channel, task.task_id],
  );
  await insertCard(tx, {
    projectId,
    kind: 'message',
    author: 'user',
    content: { role: 'user', content: userText(task.input) },
    metadata: { turn_id: turnId, task_id: task.task_id, step: 0 },
  });
  return { taskId: task.task_id, turnId, channel: task.channel };
}

/**
 * A task row of the inbox: its turn starts, unless its thread has a turn running (the message
 * waits; the end of that turn starts the next) or an older message waiting (that one starts).
 */
async function startTurn(
  tx: Db,
  projectId: string,
  agentId: string,
  row: InboxRow,
): Promise<StartedTurn | 'queued' | undefined> {
  if (!UUID.test(row.correlation_id)) return undefined;
  const thread = await lockThreadOf(tx, projectId, row.correlation_id);
  if (!thread) return startTaskTurn(tx, projectId, agentId, row.correlation_id);
  return (await startOldest(tx, projectId, agentId, thread.thread_id)) ?? 'queued';
}

/**
 * Starts the turn of a locked thread's oldest waiting message, if no turn of it is unfinished.
 * A message canceled between choosing it and starting it (its cancel does not take the thread
 * lock) gives its place to the next one, so the thread is never left idle with messages waiting.
 */
async function startOldest(
  tx: Db,
  projectId: string,
  agentId: string,
  threadId: string,
): Promise<StartedTurn | undefined> {
  // Bounded: each pass sees one pending message leave that state for good.
  for (let pass = 0; pass < 100; pass++) {
    const next = await nextOfThread(tx, projectId, threadId);
    if (!next) return undefined;
    const started = await startTaskTurn(tx, projectId, agentId, next);
    if (started) return started;
  }
  return undefined;
}

/** After a turn of a thread ended (in the same transaction): the thread's next message starts. */
export async function startNextOfThread(
  tx: Db,
  projectId: string,
  agentId: string,
  endedTaskId: string,
): Promise<StartedTurn | undefined> {
  const thread = await lockThreadOf(tx, projectId, endedTaskId);
  return thread ? startOldest(tx, projectId, agentId, thread.thread_id) : undefined;
}

/** Marks the answered call done; the turn becomes ready once none of its epoch is pending. */
async function answerCall(tx: Db, projectId: string, row: InboxRow): Promise<string | undefined> {
  const [call] = await tx.query<{ turn_id: string; epoch: number }>(
    'turns_call_of_result',
    `SELECT turn_id, epoch FROM state.turn_calls WHERE project_id = $1 AND tool_call_id = $2`,
    [projectId, row.correlation_id],
  );
  if (!call) return 'no turn made this call';
  const [turn] = await tx.query<{ status: string; epoch: number }>(
    'turns_lock',
    `SELECT status, epoch FROM state.turns WHERE turn_id = $1 FOR UPDATE`,
    [call.turn_id],
  );
  const epoch = row.payload.turn_epoch;
  if (!turn || turn.status !== 'waiting' || call.epoch !== turn.epoch)
    return `turn is at epoch ${turn?.epoch} (${turn?.status}), call was of epoch ${call.epoch}`;
  if (epoch !== undefined && epoch !== null && epoch !== turn.epoch)
    return `result carries epoch ${epoch}, turn is at ${turn.epoch}`;
  const done = await tx.query(
    'turns_answer_call',
    `UPDATE state.turn_calls SET status = 'done', result_card_id = $3
     WHERE project_id = $1 AND tool_call_id = $2 AND status = 'pending' RETURNING 1`,
    [projectId, row.correlation_id, row.payload.card_id ?? null],
  );
  if (done.length === 0) return 'call already answered';
  await readyIfAnswered(tx, call.turn_id, turn.epoch);
  return undefined;
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

export async function applyInbox(
  tx: Db,
  projectId: string,
  agentId: string,
  instanceId: string,
): Promise<AppliedInbox> {
  // SKIP LOCKED: rows another instance is applying right now are its to apply.
  const rows = await tx.query<InboxRow>(
    'turns_claim_inbox',
    `SELECT inbox_id, message_type, correlation_id, payload FROM state.agent_inbox
     WHERE project_id = $1 AND agent_id = $2 AND status = 'pending'
     ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED`,
    [projectId, agentId],
  );
  // The threads of the batch's messages are locked up front, in one order: two instances
  // applying batches that name the same threads in another order would otherwise deadlock.
  const taskIds = rows.flatMap((r) =>
    r.message_type === 'task' && UUID.test(r.correlation_id) ? [r.correlation_id] : [],
  );
  if (taskIds.length) await lockThreadsOf(tx, projectId, taskIds);
  const out: AppliedInbox = { started: [], resumed: [], ignored: [], applied: rows.length };
  for (const row of rows) {
    if (row.message_type === 'task') {
      const started = await startTurn(tx, projectId, agentId, row);
      if (started === 'queued')
        out.ignored.push({
          correlationId: row.correlation_id,
          reason: 'its thread has a turn running; it starts its next message when that ends',
        });
      else if (started) out.started.push(started);
      else out.ignored.push({ correlationId: row.correlation_id, reason: 'task not pending' });
      continue;
    }
    const why = await answerCall(tx, projectId, row);
    if (why) out.ignored.push({ correlationId: row.correlation_id, reason: why });
  }
  if (rows.length > 0) {
    await tx.query(
      'turns_inbox_done',
      `UPDATE state.agent_inbox SET status = 'done', claimed_by = $2, claimed_at = now()
       WHERE inbox_id = ANY($1::uuid[])`,
      [rows.map((r) => r.inbox_id), instanceId],
    );
    const ready = await tx.query<{ turn_id: string }>(
      'turns_ready_of_agent',
      `SELECT turn_id FROM state.turns WHERE project_id = $1 AND agent_id = $2 AND status = 'ready'`,
      [projectId, agentId],
    );
    out.resumed = ready.map((r) => r.turn_id);
  }
  return out;
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
