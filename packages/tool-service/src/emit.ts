// Publishing what a call produced: progress events while it runs (core NATS, lossy), and once
// it finished the result event (always) and, when an agent waits, the wakeup. Both carry deterministic Nats-Msg-Ids, so a re-emit after a redelivery reaches
// live listeners while JetStream keeps one copy inside the dedupe window.
import type { Logger } from 'pino';
import type { Bus, Disposition } from '@toolmesh/bus';
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import { Header, MsgId, encodeMessage, type ToolResultContent } from '@toolmesh/protocol';
import type { CallIds } from './stages/intake.ts';

export interface EmittedResult {
  cardId: string;
  createdAt: Date;
  content: ToolResultContent;
}

export async function emitResult(bus: Bus, ids: CallIds, r: EmittedResult): Promise<void> {
  const scope = { project: ids.project, channel: ids.channel };
  const toolName = `${ids.target}.${ids.tool}`;
  const result = bus.publish(
    bus.subjects.toolResult({ ...scope, target: ids.target }),
    encodeMessage('tool_result', {
      v: 1,
      tool_call_id: ids.toolCallId,
      tool_name: toolName,
      status: r.content.status,
      card_id: r.cardId,
      created_at: r.createdAt.toISOString(),
      content: r.content,
    }),
    {
      msgId: MsgId.toolResult(ids.project, ids.toolCallId),
      headers: { [Header.toolCallId]: ids.toolCallId, [Header.agentId]: ids.agentId },
    },
  );
  if (ids.agentId === undefined) {
    await result;
    return;
  }
  // Observed below; this only keeps a failure from being reported as unhandled meanwhile.
  result.catch(() => undefined);
  // Sent right behind the result event on the same connection (so in that order), without
  // waiting for the result's acknowledgement first: one round trip instead of two.
  const wakeup = bus.publish(
    bus.subjects.agentWakeup({ ...scope, agent: ids.agentId }),
    encodeMessage('wakeup', {
      v: 1,
      agent_id: ids.agentId,
      reason: 'tool_result',
      correlation_id: ids.toolCallId,
      ...(ids.turnId !== undefined ? { turn_id: ids.turnId } : {}),
      ...(ids.turnEpoch !== undefined ? { turn_epoch: ids.turnEpoch } : {}),
    }),
    {
      msgId: MsgId.wakeup(ids.project, ids.agentId, ids.toolCallId),
      headers: {
        [Header.agentId]: ids.agentId,
        [Header.toolCallId]: ids.toolCallId,
        [Header.turnId]: ids.turnId,
        [Header.turnEpoch]: ids.turnEpoch?.toString(),
      },
    },
  );
  await Promise.all([result, wakeup]);
}

/** A progress event of a running call: a sign of life beside the result, never in its slot. */
export function emitProgress(bus: Bus, ids: CallIds, detail?: Record<string, unknown>): void {
  bus.publishCore(
    bus.subjects.toolProgress({ project: ids.project, channel: ids.channel, target: ids.target }),
    encodeMessage('tool_progress', {
      v: 1,
      tool_call_id: ids.toolCallId,
      tool_name: `${ids.target}.${ids.tool}`,
      at: new Date().toISOString(),
      ...(detail ? { detail } : {}),
    }),
  );
}

/** Answers a copy of a call that already has its card by publishing that card again. */
export async function reemitCard(
  bus: Bus,
  store: CallsStore & RegistryStore,
  ids: CallIds,
  clog: Logger,
): Promise<Disposition | undefined> {
  const card = await store.cards.toolResult(ids.project, ids.toolCallId);
  if (!card) return undefined;
  await emitResult(bus, ids, {
    cardId: card.card_id,
    createdAt: card.created_at,
    content: card.content as ToolResultContent,
  });
  clog.info({ card_id: card.card_id }, 'duplicate call: re-emitted its existing result');
  return { type: 'ack' };
}
