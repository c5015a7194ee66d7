// The fenced writes that end a step: recording its answer and calls (commitStep) and ending the
// turn (finishTurn). Each is one statement: the turn row is updated only while the step's run
// token still holds it (the UPDATE locks the row and re-checks the token against its latest
// version), and every write follows from that UPDATE's result, so a step whose lease was taken
// over writes nothing at all. finishTurn calls a function (migration 0027) rather than chaining
// CTEs, because ending a thread's turn must lock the thread first and then start its next
// message, steps that must see each other's writes. One statement is also one round trip and
// one commit, which is most of what a step costs the worker besides the model. The statements
// themselves are in turn-statements.ts, beside the other moves of the turn.
import { v7 as uuidv7 } from 'uuid';
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';
import { COMMIT_STEP, FINISH } from './turn-statements.ts';
import type { ClaimedTurn, CommitStep, FinishedTurn, FinishTurn } from './turn-records.ts';

/** Writes a step's cards and calls and suspends (or re-readies) the turn; undefined if fenced. */
export async function commitStep(
  db: Db,
  t: ClaimedTurn,
  s: CommitStep,
): Promise<{ epoch: number; step: number } | undefined> {
  // Cards in the order the conversation reads them back (created_at ties within a statement,
  // then card_id, which uuidv7 makes increasing): the answer, then each call and its result.
  const cards: { id: string; kind: string; call: string | null; content: string }[] = [];
  const card = (kind: string, call: string | null, content: unknown) => {
    const id = uuidv7();
    cards.push({ id, kind, call, content: JSON.stringify(content) });
    return id;
  };
  card('message', null, s.assistant);
  const results: (string | null)[] = [];
  for (const c of s.calls) {
    const { toolCallId: id, toolName: name, arguments: args } = c;
    card('tool.call', id, { tool_call_id: id, tool_name: name, arguments: args });
    results.push(c.answer ? card('tool.result', id, c.answer) : null);
  }
  const pending = s.calls.some((c) => !c.answer);
  const [row] = await db.query<{ epoch: number; step: number }>('turns_commit_step', COMMIT_STEP, [
    t.turn_id,
    t.run_token,
    pending ? 'waiting' : 'ready',
    t.project_id,
    s.author,
    cards.map((c) => c.id),
    cards.map((c) => c.kind),
    cards.map((c) => c.call),
    cards.map((c) => c.content),
    s.calls.map((c) => c.toolCallId),
    s.calls.map((c) => c.toolName),
    s.calls.map((c) => JSON.stringify(c.arguments)),
    s.calls.map((c) => (c.answer ? 'done' : 'pending')),
    s.calls.map((c) => c.deadlineMs),
    results,
  ]);
  return row;
}

/**
 * Writes the final card, ends the turn and its task, and starts the turn of its thread's next
 * message if one waits, in one call of state.finish_turn (migration 0027): a crash cannot leave
 * a thread idle with messages waiting. Undefined if fenced.
 */
export async function finishTurn(
  db: Db,
  t: ClaimedTurn,
  f: FinishTurn,
): Promise<FinishedTurn | undefined> {
  const [row] = await db.query<
    Card & { next_task_id: string | null; next_turn_id: string | null; next_channel: string | null }
  >('turns_finish', FINISH, [
    t.project_id,
    t.agent_id,
    t.task_id,
    t.turn_id,
    t.run_token,
    f.status,
    uuidv7(),
    f.author,
    JSON.stringify(f.content),
    f.error ? JSON.stringify(f.error) : null,
  ]);
  if (!row) return undefined;
  const { next_task_id, next_turn_id, next_channel, ...card } = row;
  const next =
    next_task_id && next_turn_id && next_channel
      ? { taskId: next_task_id, turnId: next_turn_id, channel: next_channel }
      : undefined;
  return { card, next };
}
