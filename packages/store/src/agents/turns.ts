// Agent turns (state.turns, state.turn_calls): the agent worker's durable state, as a repository
// over the statements of turn-statements.ts (the state machine, move by move). Every write that
// moves a turn locks its row first, so the order is always inbox rows -> turn -> its calls, and a
// step's writes are fenced by the run token of the lease it was started under: an instance that
// lost its lease (it stalled, another took over) can no longer change the turn.
import { randomUUID } from 'node:crypto';
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';
import { applyInbox, fireDeadlines } from './turn-events.ts';
import type {
  AppliedInbox,
  ClaimedTurn,
  CommitStep,
  Conversation,
  FinishedTurn,
  FinishTurn,
  TimedOutCall,
  TurnCallRecord,
  TurnRecord,
  TurnScope,
} from './turn-records.ts';
import {
  contextOf,
  createRegistryCache,
  readStepContext,
  type StepContext,
  type StepContextRow,
} from './step-context.ts';
import { commitStep, finishTurn } from './turn-commits.ts';
import { createBatcher } from '../core/batcher.ts';
import { CARD_COLUMNS as CARD, shownCard } from './turn-cards.ts';
import {
  CALL_COLUMNS,
  CLAIM,
  MARK_PUBLISHED,
  RENEW,
  TURN_COLUMNS,
  WAKE,
} from './turn-statements.ts';

// The records live in turn-records.ts, which the statements' modules share; named here too, the
// repository's front.
export { TurnStatus } from './turn-records.ts';
export type {
  ClaimedTurn,
  CommitStep,
  Conversation,
  FinishedTurn,
  FinishTurn,
  StepCall,
  TurnCallRecord,
  TurnRecord,
  TurnScope,
} from './turn-records.ts';

/** What a wakeup's statement found: the applied inbox (when asked) and the claimed turn. */
export interface WokenTurn {
  applied: AppliedInbox | undefined;
  claimed: { turn: ClaimedTurn; context: StepContext } | undefined;
}

type TurnJson = Omit<ClaimedTurn, 'lease_until' | 'created_at' | 'updated_at'> & {
  lease_until: string;
  created_at: string;
  updated_at: string;
};

export interface TurnsRepo {
  /**
   * Applies pending inbox rows of one agent: tasks start turns; a result row (one its card
   * statement could not apply) is applied if it now can, else reported ignored.
   */
  applyInbox(projectId: string, agentId: string, instanceId: string): Promise<AppliedInbox>;
  /** Claims a turn due for a step (ready, or running under an expired lease). */
  claim(
    scope: { projectId: string; agentId: string } | undefined,
    instanceId: string,
    leaseMs: number,
  ): Promise<ClaimedTurn | undefined>;
  /**
   * A wakeup's work in one round trip (migration 0037): applies the agent's inbox when `apply`,
   * then claims its oldest due turn and reads that turn's step context.
   */
  wake(
    scope: { projectId: string; agentId: string },
    instanceId: string,
    leaseMs: number,
    apply: boolean,
  ): Promise<WokenTurn>;
  /** False when the lease was lost: the step must stop without writing. */
  renew(turnId: string, runToken: string, leaseMs: number): Promise<boolean>;
  /** Writes a step's cards and calls and suspends (or re-readies) the turn; undefined if fenced. */
  commitStep(t: ClaimedTurn, s: CommitStep): Promise<{ epoch: number; step: number } | undefined>;
  /**
   * Starts the deadlines of published calls still pending, from when each was acknowledged:
   * `ackedMsAgo[i]` ms before now (0 when not given). A call answered already is left as it is.
   */
  markPublished(projectId: string, toolCallIds: string[], ackedMsAgo?: number[]): Promise<void>;
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
  /** What a step reads before asking the model (step-context.ts), in one statement. */
  stepContext(t: TurnRecord): Promise<StepContext>;
  get(projectId: string, turnId: string): Promise<TurnRecord | undefined>;
  byTask(projectId: string, taskId: string): Promise<TurnRecord | undefined>;
  calls(turnId: string): Promise<TurnCallRecord[]>;
}

const CALL_OF_C = CALL_COLUMNS.replace(/\w+/g, 'c.$&');
/** A call's result card, joined in beside the call (null columns when it has none yet). */
const RESULT_OF_R = `r.card_id AS r_card_id, r.kind AS r_kind, r.tool_call_id AS r_tool_call_id,
  r.author AS r_author, r.content AS r_content, r.metadata AS r_metadata,
  r.created_at AS r_created_at`;
interface ResultColumns {
  r_card_id: string | null;
  r_kind: Card['kind'] | null;
  r_tool_call_id: string | null;
  r_author: string | null;
  r_content: unknown;
  r_metadata: Record<string, unknown> | null;
  r_created_at: Date | null;
}

export function createTurnsRepo(db: Db): TurnsRepo {
  const registries = createRegistryCache();
  // Steps that published their calls in the same turn of the event loop (many agents at once)
  // start their deadlines in one statement.
  let batchKey = 0;
  const published = createBatcher<{ projectId: string; ids: string[]; ago: number[] }, true>({
    maxBatch: 100,
    maxInFlight: 2,
    key: () => String(batchKey++),
    run: async (items) => {
      const byProject = new Map<string, [string, number][]>();
      for (const i of items)
        byProject.set(i.projectId, [
          ...(byProject.get(i.projectId) ?? []),
          ...i.ids.map((id, n) => [id, i.ago[n] ?? 0] as [string, number]),
        ]);
      await Promise.all(
        [...byProject].map(([projectId, pairs]) =>
          db.query('turns_mark_published', MARK_PUBLISHED, [projectId, JSON.stringify(pairs)]),
        ),
      );
      return items.map(() => true as const);
    },
  });
  return {
    applyInbox: (projectId, agentId, instanceId) => applyInbox(db, projectId, agentId, instanceId),

    claim: async (scope, instanceId, leaseMs) =>
      (
        await db.query<ClaimedTurn>(
          scope ? 'turns_claim_agent' : 'turns_claim',
          CLAIM(scope !== undefined),
          [...(scope ? [scope.projectId, scope.agentId] : []), instanceId, randomUUID(), leaseMs],
        )
      )[0],

    wake: async (scope, instanceId, leaseMs, apply) => {
      const held = registries.held(scope.projectId);
      const [row] = await db.query<
        StepContextRow & { applied: AppliedInbox | null; turn: TurnJson | null }
      >('turns_wake', WAKE, [
        scope.projectId,
        scope.agentId,
        instanceId,
        randomUUID(),
        leaseMs,
        apply,
        held?.digest ?? null,
      ]);
      const { applied, turn } = row!;
      return {
        applied: applied ?? undefined,
        claimed: turn
          ? {
              turn: {
                ...turn,
                lease_until: new Date(turn.lease_until),
                created_at: new Date(turn.created_at),
                updated_at: new Date(turn.updated_at),
              },
              context: contextOf(row!, registries.resolve(scope.projectId, held, row!)),
            }
          : undefined,
      };
    },

    renew: async (turnId, runToken, leaseMs) =>
      (await db.query('turns_renew', RENEW, [turnId, runToken, leaseMs])).length === 1,

    commitStep: (t, s) => commitStep(db, t, s),

    markPublished: async (projectId, ids, ackedMsAgo) => {
      await published.submit({ projectId, ids, ago: ackedMsAgo ?? [] });
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

    finish: (t, f) => finishTurn(db, t, f),

    fireDeadlines: (graceMs, author, limit) => fireDeadlines(db, graceMs, author, limit),

    conversation: async (t) => {
      // Two reads side by side: the turn's cards, and its calls each with its result card.
      const [cards, rows] = await Promise.all([
        db.query<Card>(
          'turns_cards',
          `SELECT ${CARD} FROM cards
           WHERE metadata ? 'turn_id' AND metadata->>'turn_id' = $2 AND project_id = $1
           ORDER BY created_at, card_id`,
          [t.project_id, t.turn_id],
        ),
        db.query<TurnCallRecord & ResultColumns>(
          'turns_calls_with_results',
          `SELECT ${CALL_OF_C}, ${RESULT_OF_R}
           FROM state.turn_calls c
           LEFT JOIN cards r ON r.project_id = c.project_id AND r.card_id = c.result_card_id
           WHERE c.turn_id = $1 ORDER BY c.epoch, c.seq`,
          [t.turn_id],
        ),
      ]);
      const results = new Map<string, Card>();
      const calls = rows.map((row) => {
        const {
          r_card_id,
          r_kind,
          r_tool_call_id,
          r_author,
          r_content,
          r_metadata,
          r_created_at,
          ...call
        } = row;
        if (r_card_id !== null) {
          results.set(call.tool_call_id, {
            card_id: r_card_id,
            project_id: t.project_id,
            kind: r_kind!,
            tool_call_id: r_tool_call_id,
            author: r_author!,
            content: r_content,
            metadata: r_metadata!,
            created_at: r_created_at!,
          });
        }
        return call;
      });
      return { cards: cards.map(shownCard), calls, results };
    },

    stepContext: (t) => readStepContext(db, registries, t),

    get: async (projectId, turnId) =>
      (
        await db.query<TurnRecord>(
          'turns_get',
          `SELECT ${TURN_COLUMNS} FROM state.turns WHERE project_id = $1 AND turn_id = $2`,
          [projectId, turnId],
        )
      )[0],

    byTask: async (projectId, taskId) =>
      (
        await db.query<TurnRecord>(
          'turns_by_task',
          `SELECT ${TURN_COLUMNS} FROM state.turns WHERE project_id = $1 AND task_id = $2`,
          [projectId, taskId],
        )
      )[0],

    calls: (turnId) =>
      db.query<TurnCallRecord>(
        'turns_calls',
        `SELECT ${CALL_COLUMNS} FROM state.turn_calls WHERE turn_id = $1 ORDER BY epoch, seq`,
        [turnId],
      ),
  };
}
