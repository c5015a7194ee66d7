// Stage 7, finish: where every result becomes its one card: the card (with the closed execution row, and the
// answer to the turn when an agent waits) written by one statement, retried through a passing outage,
// then the result event (and the agent's wakeup) published. The lease is left to lapse rather
// than rewritten as done: one KV write less per call; a copy of the call arriving meanwhile
// finds the card.
import type { Logger } from 'pino';
import { isTerminalError, type Bus, type Disposition, type Lease } from '@toolmesh/bus';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import { MeshError, RetryableError, errorCodeOf, type ToolResultContent } from '@toolmesh/protocol';
import type { CallCost } from '../define.ts';
import { emitResult } from '../emit.ts';
import type { CallInHand, Finish } from './context.ts';
import type { CallIds } from './intake.ts';
import { countResult, traced } from '../observe.ts';
import type { Persist } from '../persist.ts';
import { sanitizeResult } from '../sanitize.ts';
import { failure } from '../takeover.ts';

export interface FinishDeps {
  bus: Bus;
  store: CallsStore & RegistryStore;
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

/**
 * A call whose stages threw. Infrastructure trouble is thrown again (the consumer naks it with
 * backoff), unless this was the last delivery the server allows: then, as for an error every
 * delivery would meet (a stack overflow on the message, a value Postgres refuses), a failure is
 * filed now rather than leaving the caller without any result.
 */
export async function fileUnhandled(
  finish: Finish,
  c: CallInHand,
  err: unknown,
): Promise<Disposition> {
  const { ids, clog } = c;
  if (isTerminalError(err)) {
    // Redelivering it 50 times only delays the caller's answer by minutes. Filed now, without
    // the arguments and context, which may be the cause.
    clog.error({ err }, 'call cannot be handled on any delivery; filed failed at once');
    const code = err instanceof MeshError ? err.code : 'internal_error';
    const plain: CallIds = { ...ids, arguments: undefined, context: undefined };
    const message = `the call cannot be handled: ${(err as Error).message}`.slice(0, 2_000);
    try {
      return await finish(plain, failure(code, message), undefined, clog);
    } catch (again) {
      if (again instanceof RetryableError) throw again;
      clog.error({ err: again }, 'the failure could not be filed either; message terminated');
      return { type: 'term', reason: message };
    }
  }
  if (!c.lastDelivery) throw err; // the consumer naks with backoff
  clog.error({ err }, 'failure on the last allowed delivery');
  const message = `gave up after ${c.d.deliveryCount} deliveries: ${(err as Error).message}`;
  return finish(ids, failure('retries_exhausted', message), undefined, clog);
}
