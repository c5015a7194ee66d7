// A thread's history: the turns of its earlier messages as chat messages, placed in the prompt
// of its next turn between the system prompt and that turn's own messages. Each earlier turn
// shows as it happened (the message, the model's answers with their tool calls, each call's
// result) and ends with its final answer, or a note saying how it failed or was canceled.
//
// The history is kept within a token budget ([agent] thread_history_tokens), counted at four
// characters a token. The rule, in docs/agents.md too: turns are kept whole, never cut
// inside; the thread's first message is kept (without the rest of its turn) whenever it fits
// at all; then the newest turns, newest first, while they fit; then the rest of the first
// turn, if everything after it fit. What is left out is the oldest turns after the first, and
// a note at the end of the system prompt says how many.
import type { AgentsStore, ThreadTurn, TurnRecord } from '@toolmesh/store';
import type { ChatMessage } from './llm.ts';
import { buildMessages } from './prompt.ts';

/** Earlier turns read for one prompt at most: the first and the newest (budget allowing). */
export const HISTORY_TURNS_READ = 200;

/** A rough count: four characters a token, the usual figure for English and JSON. */
export function estimateTokens(messages: ChatMessage[]): number {
  let chars = 0;
  for (const m of messages) chars += JSON.stringify(m).length;
  return Math.ceil(chars / 4);
}

function inputText(input: unknown): string {
  return typeof input === 'string' ? input : JSON.stringify(input);
}

/** What the turn ended with, as the model's closing word on it. */
function finalText(t: ThreadTurn): string {
  const c = (t.final?.content ?? {}) as {
    status?: string;
    result?: unknown;
    text?: unknown;
    error?: { code?: string; message?: string };
  };
  if (t.status === 'succeeded') {
    const r = c.result ?? c.text ?? '';
    return typeof r === 'string' ? r : JSON.stringify(r);
  }
  const why = c.error?.message ?? (t.error?.['message'] as string | undefined) ?? 'no reason kept';
  return `[this turn ended ${t.status}: ${why}]`;
}

/** One earlier turn as messages; its first message is always the user's. */
export function turnMessages(t: ThreadTurn, maxResultChars: number): ChatMessage[] {
  const messages = buildMessages('', t.conversation, maxResultChars);
  // A message canceled before its turn began has no cards: its input stands alone.
  if (messages[0]?.role !== 'user') messages.unshift({ role: 'user', content: inputText(t.input) });
  messages.push({ role: 'assistant', content: finalText(t) });
  return messages;
}

export interface FittedHistory {
  messages: ChatMessage[];
  /** Earlier turns in all. */
  earlier: number;
  /** Earlier turns not shown at all. */
  leftOut: number;
  /** Only the first turn's message is shown, not the rest of that turn. */
  firstInputOnly: boolean;
  tokens: number;
}

/**
 * Applies the budget rule to the earlier turns read (`turns`, oldest first, each as messages;
 * the first of them is the thread's first turn when `hasFirst`). `earlier` is how many turns
 * precede the current one in all, read or not.
 */
export function fitHistory(
  turns: ChatMessage[][],
  earlier: number,
  budget: number,
  hasFirst: boolean,
): FittedHistory {
  const first = hasFirst ? turns[0] : undefined;
  const rest = hasFirst ? turns.slice(1) : turns;
  const input = first?.slice(0, 1) ?? [];
  let used = estimateTokens(input);
  const keepInput = first !== undefined && used <= budget;
  if (!keepInput) used = 0;
  const kept: ChatMessage[][] = [];
  for (let i = rest.length - 1; i >= 0; i--) {
    const cost = estimateTokens(rest[i]!);
    if (used + cost > budget) break;
    used += cost;
    kept.unshift(rest[i]!);
  }
  let head: ChatMessage[] = keepInput ? input : [];
  let firstWhole = false;
  const readAllAfterFirst = rest.length === earlier - 1;
  if (keepInput && first && kept.length === rest.length && readAllAfterFirst) {
    const whole = used - estimateTokens(input) + estimateTokens(first);
    if (whole <= budget) {
      head = first;
      firstWhole = true;
      used = whole;
    }
  }
  const messages = [...head, ...kept.flat()];
  return {
    messages,
    earlier,
    leftOut: earlier - kept.length - (head.length > 0 ? 1 : 0),
    firstInputOnly: keepInput && !firstWhole,
    tokens: used,
  };
}

/** The note the system prompt carries when the history was shortened. */
export function historyNote(h: FittedHistory, budget: number): string | undefined {
  if (h.leftOut === 0 && !h.firstInputOnly) return undefined;
  const partly = h.firstInputOnly ? '; of the first turn only its message is kept' : '';
  return `[${h.leftOut} of the ${h.earlier} earlier turns of this conversation are left out to keep it within ${budget} tokens${partly}.]`;
}

/**
 * The prompt of a turn of a thread: the history placed after the system message, the note (if
 * any) appended to it. A task of no thread, or the thread's first message, is left as it is.
 */
export async function withThreadHistory(
  store: AgentsStore,
  turn: TurnRecord,
  cfg: { thread_history_tokens: number; tool_result_max_chars: number },
  messages: ChatMessage[],
  /** The task's place in its thread when already read (the step context has it). */
  known?: { place: { thread_id: string; seq: number } | undefined },
): Promise<ChatMessage[]> {
  const place = known ? known.place : await store.threads.placeOf(turn.project_id, turn.task_id);
  if (!place || place.seq === 1) return messages;
  const turns = await store.threads.turns(turn.project_id, place.thread_id, {
    beforeSeq: place.seq,
    limit: HISTORY_TURNS_READ,
    withFirst: true,
  });
  const hasFirst = turns[0]?.seq === 1;
  const fitted = fitHistory(
    turns.map((t) => turnMessages(t, cfg.tool_result_max_chars)),
    place.seq - 1,
    cfg.thread_history_tokens,
    hasFirst,
  );
  const note = historyNote(fitted, cfg.thread_history_tokens);
  const [head, ...own] = messages;
  // The system prompt the worker builds is text; the note joins it, so the prompt keeps one
  // system message (some endpoints refuse a second one).
  if (head?.role !== 'system' || typeof head.content !== 'string') {
    return [
      ...(note ? [{ role: 'system' as const, content: note }] : []),
      ...fitted.messages,
      ...messages,
    ];
  }
  const system: ChatMessage = note
    ? { role: 'system', content: `${head.content}\n\n${note}` }
    : head;
  return [system, ...fitted.messages, ...own];
}
