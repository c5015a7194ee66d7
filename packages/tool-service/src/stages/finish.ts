// Where every result becomes its one card: the card (with the closed execution row, and the
// agent's inbox row when one waits) written by one statement, retried through a passing outage,
// then the result event (and the agent's wakeup) published. The lease is left to lapse rather
// than rewritten as done: one KV write less per call; a copy of the call arriving meanwhile
// finds the card.
import type { Logger } from 'pino';
import type { Bus, Disposition, Lease } from '@toolmesh/bus';
import type { Store } from '@toolmesh/store';
import { RetryableError, errorCodeOf, type ToolResultContent } from '@toolmesh/protocol';
import type { CallCost } from './define.ts';
import { emitResult } from './emit.ts';
import type { CallIds } from './intake.ts';
import { countResult, traced } from './observe.ts';
import type { Persist } from './persist.ts';
import { sanitizeResult } from './sanitize.ts';
import { failure } from './takeover.ts';

export interface FinishDeps {
  bus: Bus;
  store: Store;
  /** `<service>@<instance>`: the cards' author. */
  author: string;
  instanceId: string;
  persist: Persist;
  /** The call's arguments as the execution row keeps them (capped). */
  argumentsOf: (ids: CallIds) => unknown;
}

export async function finishCall(
  deps: FinishDeps,
  ids: CallIds,
  content: ToolResultContent,
  lease: Lease | undefined,
  clog: Logger,
  metadata: Record<string, unknown> = {},
  cost?: CallCost,
): Promise<Disposition> {
  const { bus, store, author, instanceId, persist, argumentsOf } = deps;
  // The one place every result becomes a card: internal errors lose their host details here.
  const record = (raw: ToolResultContent, args: unknown) => {
    const c = sanitizeResult(raw);
    return persist(
      'writing the result card',
      () =>
        traced('card write', ids, () =>
          store.results.record({
            projectId: ids.project,
            channel: ids.channel,
            toolCallId: ids.toolCallId,
            toolName: `${ids.target}.${ids.tool}`,
            target: ids.target,
            author,
            instanceId,
            content: c,
            metadata,
            ...(cost ? { cost } : {}),
            agentId: ids.agentId,
            turnId: ids.turnId,
            turnEpoch: ids.turnEpoch,
            arguments: args,
            context: ids.context,
            credentialId: ids.credentialId,
            // No lease held: no tombstone was met, so a stored cancel decides.
            checkCancel: lease === undefined,
          }),
        ),
      lease,
      clog,
    );
  };
  let recorded;
  try {
    recorded = await record(content, argumentsOf(ids));
  } catch (err) {
    if (err instanceof RetryableError) throw err;
    if (errorCodeOf(err) === 'tool_call_id_taken') {
      // A call under another target carrying an agent's pending id: its result would take the
      // agent's slot. Nothing is filed; the lease goes at once so the agent's own call of
      // that id is not held up.
      clog.warn({ code: 'tool_call_id_taken', reason: (err as Error).message }, 'result refused');
      await lease?.release().catch(() => undefined);
      return { type: 'term', reason: `tool_call_id_taken: ${(err as Error).message}` };
    }
    // Postgres refused the content itself (e.g. a NUL character, which jsonb cannot hold, in
    // the result or the arguments): retrying cannot help, so file a failure that says why,
    // without the arguments, instead of looping.
    clog.error({ err }, 'result could not be stored; filing a failure instead');
    recorded = await record(
      {
        ...failure('internal_error', `the result could not be stored: ${(err as Error).message}`),
        duration_ms: content.duration_ms,
      },
      undefined,
    );
  }
  // The lease is left to lapse rather than rewritten as done: one KV write less per call. A
  // copy of the call arriving meanwhile finds the card (below); if publishing fails, the
  // message is nak'ed and its redelivery re-emits this same card, so the event is not lost.
  await emitResult(bus, ids, recorded);
  if (recorded.inserted) countResult(ids, recorded.content);
  // Successes are counted in the execution log; one info line each would cost more than the
  // call itself at a few thousand calls per second. Everything else is logged at info.
  const level = recorded.content.status === 'succeeded' ? 'debug' : 'info';
  clog[level](
    {
      card_id: recorded.cardId,
      status: recorded.content.status,
      new: recorded.inserted,
      duration_ms: content.duration_ms,
    },
    recorded.inserted ? 'tool call finished' : 'tool call already had its result; re-emitted',
  );
  return { type: 'ack' };
}
