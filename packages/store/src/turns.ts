// Agent turns (state.turns, state.turn_calls): the agent worker's durable state. Every write
// that moves a turn locks its row first, so the order is always inbox rows -> turn -> its calls,
// and a step's writes are fenced by the run token of the lease it was started under: an instance
// that lost its lease (it stalled, another took over) can no longer change the turn.
import { randomUUID } from 'node:crypto';
import type { ToolResultContent } from '@toolmesh/protocol';
import type { Card } from './cards.ts';
import type { Db } from './db.ts';
import {
  applyInbox,
  fireDeadlines,
  startNextOfThread,
  type AppliedInbox,
  type StartedTurn,
  type TimedOutCall,
} from './turn-events.ts';
import { CARD_COLUMNS as CARD, insertCard } from './turn-cards.ts';

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

export interface TurnsRepo {
  /** Applies pending inbox rows of one agent: tasks start turns, results resume them. */
  applyInbox(projectId: string, agentId: string, instanceId: string): Promise<AppliedInbox>;
  /** Claims a turn due for a step (ready, or running under an expired lease). */
  claim(
    scope: { projectId: string; agentId: string } | undefined,
    instanceId: string,
    leaseMs: number,
  ): Promise<ClaimedTurn | undefined>;
  /** False when the lease was lost: the step must stop without writing. */
  renew(turnId: string, runToken: string, leaseMs: number): Promise<boolean>;
  /** Writes a step's cards and calls and suspends (or re-readies) the turn; undefined if fenced. */
  commitStep(t: ClaimedTurn, s: CommitStep): Promise<{ epoch: number; step: number } | undefined>;
  /** Starts the deadlines of published calls. */
  markPublished(projectId: string, toolCallIds: string[]): Promise<void>;
  /** Agents with inbox rows pending longer than this: their wakeup was lost or never sent. */
  stalledInboxes(
    olderThanMs: number,
    limit: number,
  ): Promise<{ project_id: string; agent_id: string }[]>;
  /** Pending calls never published (their instance died between commit and publish). */
  unpublished(olderThanMs: number, limit: number): Promise<(TurnCallRecord & TurnScope)[]>;
  /**
   * Writes the final card, ends the turn and its task, and starts the turn of the next message
   * of its thread, if one waits; undefined if fenced.
   */
  finish(t: ClaimedTurn, f: FinishTurn): Promise<FinishedTurn | undefined>;
  /** Pending calls past their deadline become timeout results; their turns become ready. */
  fireDeadlines(graceMs: number, author: string, limit: number): Promise<TimedOutCall[]>;
  /** The turn's cards in order, with the result card of each of its calls. */
  conversation(t: TurnRecord): Promise<Conversation>;
  get(projectId: string, turnId: string): Promise<TurnRecord | undefined>;
  byTask(projectId: string, taskId: string): Promise<TurnRecord | undefined>;
  calls(turnId: string): Promise<TurnCallRecord[]>;
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

const TURN = `turn_id, project_id, agent_id, channel, task_id, status, epoch, step, claims,
  run_token, run_owner, lease_until, created_at, updated_at`;
const CALL = `tool_call_id, turn_id, epoch, seq, tool_name, arguments, status, deadline_ms,
  published_at, result_card_id`;

/** Locks the turn if this lease still holds it. */
async function lockFenced(db: Db, t: ClaimedTurn): Promise<TurnRecord | undefined> {
  return (
    await db.query<TurnRecord>(
      'turns_lock_fenced',
      `SELECT ${TURN} FROM state.turns
       WHERE turn_id = $1 AND run_token = $2 AND status = 'running' FOR UPDATE`,
      [t.turn_id, t.run_token],
    )
  )[0];
}

export function createTurnsRepo(db: Db): TurnsRepo {
  return {
    applyInbox: (projectId, agentId, instanceId) =>
      db.tx((tx) => applyInbox(tx, projectId, agentId, instanceId)),

    claim: async (scope, instanceId, leaseMs) =>
      (
        await db.query<ClaimedTurn>(
          'turns_claim',
          `UPDATE state.turns SET status = 'running', claims = claims + 1, run_token = $4, run_owner = $3,
             lease_until = now() + make_interval(secs => $5::float8 / 1000), updated_at = now()
           WHERE turn_id = (
             SELECT turn_id FROM state.turns
             WHERE (status = 'ready' OR (status = 'running' AND lease_until < now()))
               AND ($1::text IS NULL OR (project_id = $1 AND agent_id = $2))
             ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED)
           RETURNING ${TURN}`,
          [scope?.projectId ?? null, scope?.agentId ?? null, instanceId, randomUUID(), leaseMs],
        )
      )[0],

    renew: async (turnId, runToken, leaseMs) =>
      (
        await db.query(
          'turns_renew',
          `UPDATE state.turns SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
           WHERE turn_id = $1 AND run_token = $2 AND status = 'running' RETURNING turn_id`,
          [turnId, runToken, leaseMs],
        )
      ).length === 1,

    commitStep: (t, s) =>
      db.tx(async (tx) => {
        const turn = await lockFenced(tx, t);
        if (!turn) return undefined;
        const epoch = turn.epoch + 1;
        const meta = { turn_id: t.turn_id, task_id: t.task_id, epoch, step: turn.step + 1 };
        await insertCard(tx, {
          projectId: t.project_id,
          kind: 'message',
          author: s.author,
          content: s.assistant,
          metadata: meta,
        });
        let pending = 0;
        for (const [seq, c] of s.calls.entries()) {
          await insertCard(tx, {
            projectId: t.project_id,
            kind: 'tool.call',
            toolCallId: c.toolCallId,
            author: s.author,
            content: { tool_call_id: c.toolCallId, tool_name: c.toolName, arguments: c.arguments },
            metadata: meta,
          });
          let resultCard: string | null = null;
          if (c.answer) {
            const [card] = await insertCard(tx, {
              projectId: t.project_id,
              kind: 'tool.result',
              toolCallId: c.toolCallId,
              author: s.author,
              content: c.answer,
              metadata: meta,
            });
            resultCard = card!.card_id;
          } else pending++;
          await tx.query(
            'turns_insert_call',
            `INSERT INTO state.turn_calls (project_id, tool_call_id, turn_id, epoch, seq, tool_name,
               arguments, status, deadline_ms, result_card_id)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
            [
              t.project_id,
              c.toolCallId,
              t.turn_id,
              epoch,
              seq,
              c.toolName,
              JSON.stringify(c.arguments),
              c.answer ? 'done' : 'pending',
              c.deadlineMs,
              resultCard,
            ],
          );
        }
        await tx.query(
          'turns_suspend',
          `UPDATE state.turns SET epoch = $2, step = step + 1, status = $3, claims = 0, run_token = NULL,
             run_owner = NULL, lease_until = NULL, updated_at = now()
           WHERE turn_id = $1`,
          [t.turn_id, epoch, pending > 0 ? 'waiting' : 'ready'],
        );
        return { epoch, step: turn.step + 1 };
      }),

    markPublished: async (projectId, ids) => {
      await db.query(
        'turns_mark_published',
        `UPDATE state.turn_calls SET published_at = now(),
           deadline_at = now() + make_interval(secs => deadline_ms::float8 / 1000)
         WHERE project_id = $1 AND tool_call_id = ANY($2::text[]) AND published_at IS NULL`,
        [projectId, ids],
      );
    },

    stalledInboxes: (olderThanMs, limit) =>
      db.query<{ project_id: string; agent_id: string }>(
        'turns_stalled_inboxes',
        `SELECT DISTINCT project_id, agent_id FROM state.agent_inbox
         WHERE status = 'pending' AND created_at < now() - make_interval(secs => $1::float8 / 1000)
         LIMIT $2`,
        [olderThanMs, limit],
      ),

    unpublished: (olderThanMs, limit) =>
      db.query<TurnCallRecord & TurnScope>(
        'turns_unpublished',
        `SELECT c.tool_call_id, c.turn_id, c.epoch, c.seq, c.tool_name, c.arguments, c.status,
                c.deadline_ms, c.published_at, c.result_card_id,
                t.project_id, t.agent_id, t.channel, t.epoch AS turn_epoch
         FROM state.turn_calls c JOIN state.turns t ON t.turn_id = c.turn_id
         WHERE c.status = 'pending' AND c.published_at IS NULL
           AND c.created_at < now() - make_interval(secs => $1::float8 / 1000)
         ORDER BY c.created_at LIMIT $2`,
        [olderThanMs, limit],
      ),

    finish: (t, f) =>
      db.tx(async (tx) => {
        const turn = await lockFenced(tx, t);
        if (!turn) return undefined;
        const [card] = await insertCard(tx, {
          projectId: t.project_id,
          kind: 'final',
          author: f.author,
          content: f.content,
          metadata: { turn_id: t.turn_id, task_id: t.task_id, step: turn.step },
        });
        await tx.query(
          'turns_finish',
          `UPDATE state.turns SET status = $2, run_token = NULL, run_owner = NULL,
             lease_until = NULL, updated_at = now() WHERE turn_id = $1`,
          [t.turn_id, f.status],
        );
        await tx.query(
          'turns_finish_task',
          `UPDATE state.tasks SET status = $3, final_card_id = $4, error = $5, updated_at = now()
           WHERE project_id = $1 AND task_id = $2`,
          [
            t.project_id,
            t.task_id,
            f.status,
            card!.card_id,
            f.error ? JSON.stringify(f.error) : null,
          ],
        );
        // A thread's next message waits for this turn: it starts now, in this transaction, so
        // a crash cannot leave the thread idle with messages waiting.
        const next = await startNextOfThread(tx, t.project_id, t.agent_id, t.task_id);
        return { card: card!, next };
      }),

    fireDeadlines: (graceMs, author, limit) => fireDeadlines(db, graceMs, author, limit),

    conversation: async (t) => {
      const cards = await db.query<Card>(
        'turns_cards',
        `SELECT ${CARD} FROM cards
         WHERE metadata ? 'turn_id' AND metadata->>'turn_id' = $2 AND project_id = $1
         ORDER BY created_at, card_id`,
        [t.project_id, t.turn_id],
      );
      const calls = await db.query<TurnCallRecord>(
        'turns_calls_all',
        `SELECT ${CALL} FROM state.turn_calls WHERE turn_id = $1 ORDER BY epoch, seq`,
        [t.turn_id],
      );
      const ids = calls.flatMap((c) => (c.result_card_id ? [c.result_card_id] : []));
      const found = ids.length
        ? await db.query<Card>(
            'turns_result_cards',
            `SELECT ${CARD} FROM cards WHERE project_id = $1 AND card_id = ANY($2::uuid[])`,
            [t.project_id, ids],
          )
        : [];
      const byCard = new Map(found.map((c) => [c.card_id, c]));
      const results = new Map<string, Card>();
      for (const c of calls) {
        const card = c.result_card_id ? byCard.get(c.result_card_id) : undefined;
        if (card) results.set(c.tool_call_id, card);
      }
      return { cards, calls, results };
    },

    get: async (projectId, turnId) =>
      (
        await db.query<TurnRecord>(
          'turns_get',
          `SELECT ${TURN} FROM state.turns WHERE project_id = $1 AND turn_id = $2`,
          [projectId, turnId],
        )
      )[0],

    byTask: async (projectId, taskId) =>
      (
        await db.query<TurnRecord>(
          'turns_by_task',
          `SELECT ${TURN} FROM state.turns WHERE project_id = $1 AND task_id = $2`,
          [projectId, taskId],
        )
      )[0],

    calls: (turnId) =>
      db.query<TurnCallRecord>(
        'turns_calls',
        `SELECT ${CALL} FROM state.turn_calls WHERE turn_id = $1 ORDER BY epoch, seq`,
        [turnId],
      ),
  };
}
