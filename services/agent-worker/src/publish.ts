// What the worker puts on the bus: tool calls with the turn's headers (so the result's wakeup
// comes back to this agent, carrying the turn id and epoch), cancels of calls past their
// deadline, `evt.agent.<agent>.task|step|state` facts and lossy `str.agent.<agent>.chunk` tokens.
import type { Bus } from '@toolmesh/bus';
import {
  encodeMessage,
  toolCallEnvelope,
  type AgentState,
  type ErrorBody,
  type TaskStatus,
} from '@toolmesh/protocol';
import type { TurnRecord } from '@toolmesh/store';

export interface OutgoingCall {
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  /** Sent as the call's own timeout when the tool sets one. */
  timeoutMs?: number | undefined;
}

type TurnScope = Pick<TurnRecord, 'project_id' | 'channel' | 'agent_id' | 'turn_id'>;

const scopeOf = (t: { project_id: string; channel: string }) => ({
  project: t.project_id,
  channel: t.channel,
});

export function createPublisher(bus: Bus) {
  return {
    toolCall: async (t: TurnScope, epoch: number, c: OutgoingCall): Promise<void> => {
      const envelope = toolCallEnvelope(bus.subjects, {
        ...scopeOf(t),
        call: {
          tool_call_id: c.toolCallId,
          tool_name: c.toolName,
          arguments: c.arguments,
          after_execution: 'suspend',
          ...(c.timeoutMs !== undefined ? { timeout_ms: c.timeoutMs } : {}),
        },
        turn: { agentId: t.agent_id, turnId: t.turn_id, turnEpoch: epoch },
      });
      await bus.publish(envelope.subject, envelope.data, {
        msgId: envelope.msgID,
        headers: envelope.headers,
      });
    },

    cancel: async (
      s: { project_id: string; channel: string },
      toolCallId: string,
      reason: string,
    ): Promise<void> => {
      await bus.publish(
        bus.subjects.cancel({ project: s.project_id, channel: s.channel }),
        encodeMessage('cancel', { v: 1, tool_call_id: toolCallId, reason }),
      );
    },

    task: async (
      s: { project_id: string; channel: string; agent_id: string },
      taskId: string,
      status: TaskStatus,
      extra: { card_id?: string; error?: ErrorBody } = {},
    ): Promise<void> => {
      await bus.publish(
        bus.subjects.agentEvent({ ...scopeOf(s), agent: s.agent_id, event: 'task' }),
        encodeMessage('agent_task', {
          v: 1,
          agent_id: s.agent_id,
          task_id: taskId,
          status,
          ...extra,
        }),
      );
    },

    step: async (t: TurnScope, epoch: number, step: number, ids: string[]): Promise<void> => {
      await bus.publish(
        bus.subjects.agentEvent({ ...scopeOf(t), agent: t.agent_id, event: 'step' }),
        encodeMessage('agent_step', {
          v: 1,
          agent_id: t.agent_id,
          turn_id: t.turn_id,
          turn_epoch: epoch,
          step,
          tool_call_ids: ids,
        }),
      );
    },

    state: async (t: TurnScope, state: AgentState): Promise<void> => {
      await bus.publish(
        bus.subjects.agentEvent({ ...scopeOf(t), agent: t.agent_id, event: 'state' }),
        encodeMessage('agent_state', {
          v: 1,
          agent_id: t.agent_id,
          state,
          turn_id: t.turn_id,
        }),
      );
    },

    chunk: (t: TurnScope, seq: number, delta: string): void => {
      bus.publishCore(
        bus.subjects.agentChunk({ ...scopeOf(t), agent: t.agent_id }),
        encodeMessage('agent_chunk', {
          v: 1,
          agent_id: t.agent_id,
          turn_id: t.turn_id,
          seq,
          delta,
        }),
      );
    },
  };
}

export type Publisher = ReturnType<typeof createPublisher>;
