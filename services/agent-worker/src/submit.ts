// The rule for a `submit_result` given beside other calls in one answer: the other calls run
// first (published, or refused, like any call) and the turn waits for their results; the step
// after them finishes the turn with the submitted result, without asking the model again. The
// final card lists the calls that ran beside the answer, each with its result card, so nothing
// the model asked for is dropped or hidden.
import type { Card, Conversation } from '@toolmesh/store';

export const SUBMIT_RESULT = 'submit_result';

interface AssistantCall {
  id: string;
  name: string;
  arguments: string;
}

export interface DeferredSubmit {
  /** The submitted answer (the raw arguments text when they were not a JSON object). */
  result: unknown;
  text: string;
  /** The calls given beside it, with how each ended. */
  calls: { tool_call_id: string; tool_name: string; status: string; card_id: string | null }[];
}

/** The submitted answer held in an argument string. */
export function submittedResult(args: string): unknown {
  try {
    const v: unknown = JSON.parse(args === '' ? '{}' : args);
    if (typeof v === 'object' && v !== null && !Array.isArray(v))
      return (v as Record<string, unknown>)['result'] ?? null;
  } catch {
    // not JSON: the text itself is the answer
  }
  return args;
}

function statusOf(card: Card | undefined): string {
  const s = (card?.content as { status?: unknown } | undefined)?.status;
  return typeof s === 'string' ? s : 'failed';
}

/** The submit_result of the turn's last assistant answer, when it came with other calls. */
export function deferredSubmit(conv: Conversation): DeferredSubmit | undefined {
  const last = conv.cards
    .filter((c) => c.kind === 'message' && (c.content as { role?: string }).role === 'assistant')
    .at(-1);
  if (!last) return undefined;
  const content = last.content as { content?: string | null; tool_calls?: AssistantCall[] };
  const calls = content.tool_calls ?? [];
  const submit = calls.find((c) => c.name === SUBMIT_RESULT);
  if (!submit) return undefined;
  const others = calls.filter((c) => c !== submit);
  const byId = new Map(conv.calls.map((c) => [c.tool_call_id, c]));
  return {
    result: submittedResult(submit.arguments),
    text: content.content ?? '',
    calls: others.map((c) => {
      const card = conv.results.get(c.id);
      return {
        tool_call_id: c.id,
        tool_name: byId.get(c.id)?.tool_name ?? c.name,
        status: byId.get(c.id)?.status === 'timeout' ? 'timeout' : statusOf(card),
        card_id: card?.card_id ?? null,
      };
    }),
  };
}
