// The records of agent turns (state.turns, state.turn_calls) and of what moves them: the types
// the turn statements share (turns.ts, turn-commits.ts, step-context.ts, turn-events.ts). Kept
// apart so those modules depend on this one and not on each other.
import type { ToolResultContent } from '@toolmesh/protocol';
import type { Card } from '../calls/cards.ts';

export const TurnStatus = {
  ready: 'ready',
  running: 'running',
  waiting: 'waiting',
  succeeded: 'succeeded',
  failed: 'failed',
  canceled: 'canceled',
} as const;
export type TurnStatus = (typeof TurnStatus)[keyof typeof TurnStatus];

export interface TurnRecord {
  turn_id: string;
  project_id: string;
  agent_id: string;
  channel: string;
  task_id: string;
  status: TurnStatus;
  epoch: number;
  step: number;
  /** Claims since the last recorded step (1 for a step's first run). */
  claims: number;
  run_token: string | null;
  run_owner: string | null;
  lease_until: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface TurnCallRecord {
  tool_call_id: string;
  turn_id: string;
  epoch: number;
  seq: number;
  tool_name: string;
  arguments: Record<string, unknown>;
  status: 'pending' | 'done' | 'timeout' | 'canceled';
  deadline_ms: number;
  published_at: Date | null;
  result_card_id: string | null;
}

/** A tool call of a step: published (no `answer`) or answered at once by the worker. */
export interface StepCall {
  toolCallId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  deadlineMs: number;
  /**
   * Set when the worker answers the call itself: a refusal (not allowed, bad arguments) or an
   * internal tool (list_available_tools). Such a call is never published.
   */
  answer?: ToolResultContent | undefined;
}

export interface CommitStep {
  /** The assistant message as the model gave it (text and calls), the conversation's record. */
  assistant: Record<string, unknown>;
  calls: StepCall[];
  author: string;
}

export interface FinishTurn {
  status: 'succeeded' | 'failed';
  content: Record<string, unknown>;
  error?: Record<string, unknown> | undefined;
  author: string;
}

export interface FinishedTurn {
  card: Card;
  /** The turn of the thread's next message, started in the same transaction. */
  next: StartedTurn | undefined;
}

/** A claimed turn: the lease's run token fences every write of the step. */
export interface ClaimedTurn extends TurnRecord {
  run_token: string;
}

export interface Conversation {
  /** Cards written for the turn (messages, calls, finals), oldest first. */
  cards: Card[];
  calls: TurnCallRecord[];
  /** The card that answered each call, by tool call id. */
  results: Map<string, Card>;
}

export interface TurnScope {
  project_id: string;
  agent_id: string;
  channel: string;
  turn_epoch: number;
}

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
