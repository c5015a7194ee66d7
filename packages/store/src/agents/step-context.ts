// Everything a step reads before it asks the model, in one statement (state.step_context,
// migration 0037): the agent's profile, the project's tools, the tools attached to the agent, the
// turn's conversation (its cards, and its calls each with its result card) and the task's place in
// its thread. Six reads were six round trips and six statements for Postgres to parse, plan and
// answer per step; one function aggregating each part to JSON costs one, and a wakeup's claim
// returns it beside the turn it claimed (state.wake_step). Dates come back as JSON text and are
// turned back into Dates here, so the records are the same as the repositories' own.
import type { AgentToolRecord } from './agents.ts';
import type { Card } from '../calls/cards.ts';
import type { Db } from '../core/db.ts';
import type { ProfileRecord } from './profiles.ts';
import type { ToolRecord } from '../registry/tools.ts';
import type { Conversation, TurnCallRecord, TurnRecord } from './turn-records.ts';
import { shownCard } from './turn-cards.ts';
import { STEP_CONTEXT } from './turn-statements.ts';

export interface StepContext {
  /** The profile the agent points at; undefined when it has none (or the agent is gone). */
  profile: ProfileRecord | undefined;
  /** Every tool of the project, by name. */
  registry: ToolRecord[];
  /** The tools attached to the agent; undefined when the agent does not exist. */
  attached: AgentToolRecord[] | undefined;
  conversation: Conversation;
  /** The task's thread and its number there, when the task is a message of a thread. */
  place: { thread_id: string; seq: number } | undefined;
}

/** A record as JSON gives it: its Date fields are text. */
type Json<T, K extends keyof T> = Omit<T, K> & { [P in K]: string };

/** The context's columns as state.step_context returns them. */
export interface StepContextRow {
  profile: Json<ProfileRecord, 'created_at' | 'updated_at'> | null;
  /** Null when the digest the caller passed is still current. */
  registry: Json<ToolRecord, 'created_at' | 'updated_at'>[] | null;
  registry_digest: string;
  attached: Json<AgentToolRecord, 'attached_at'>[] | null;
  cards: Json<Card, 'created_at'>[];
  calls: {
    call: Omit<TurnCallRecord, 'published_at'> & { published_at: string | null };
    result: Json<Card, 'created_at'> | null;
  }[];
  place: { thread_id: string | null; thread_seq: number | null } | null;
}

const card = (c: Json<Card, 'created_at'>): Card =>
  shownCard({ ...c, created_at: new Date(c.created_at) });

/**
 * The registries last read, by project, with the digest each was read under (a few hundred
 * projects at most; the least recently used goes first). A step passes the digest it holds and
 * gets the registry again only when it changed.
 */
export interface RegistryCache {
  /** What the cache holds for the project now: pass its digest, keep it for the answer. */
  held(projectId: string): CachedRegistry | undefined;
  /** The registry of a context row: the new one (kept), or the held one when still current. */
  resolve(projectId: string, held: CachedRegistry | undefined, row: StepContextRow): ToolRecord[];
}

export interface CachedRegistry {
  digest: string;
  registry: ToolRecord[];
}

export function createRegistryCache(max = 256): RegistryCache {
  const byProject = new Map<string, CachedRegistry>();
  return {
    held: (projectId) => {
      const held = byProject.get(projectId);
      if (held) {
        byProject.delete(projectId);
        byProject.set(projectId, held);
      }
      return held;
    },
    resolve: (projectId, held, row) => {
      if (row.registry === null) {
        if (!held) throw new Error('step context left out a registry it was not asked to');
        return held.registry;
      }
      const registry = row.registry.map((r) => ({
        ...r,
        created_at: new Date(r.created_at),
        updated_at: new Date(r.updated_at),
      }));
      byProject.delete(projectId);
      byProject.set(projectId, { digest: row.registry_digest, registry });
      if (byProject.size > max) byProject.delete(byProject.keys().next().value!);
      return registry;
    },
  };
}

export async function readStepContext(
  db: Db,
  cache: RegistryCache,
  t: TurnRecord,
): Promise<StepContext> {
  const held = cache.held(t.project_id);
  const [row] = await db.query<StepContextRow>('turns_step_context', STEP_CONTEXT, [
    t.project_id,
    t.agent_id,
    t.turn_id,
    t.task_id,
    held?.digest ?? null,
  ]);
  return contextOf(row!, cache.resolve(t.project_id, held, row!));
}

/** The records of a context row, with the registry it stands for. */
export function contextOf(row: StepContextRow, registry: ToolRecord[]): StepContext {
  const { profile, attached, cards, calls, place } = row;
  const results = new Map<string, Card>();
  for (const { call, result } of calls) if (result) results.set(call.tool_call_id, card(result));
  return {
    profile: profile
      ? {
          ...profile,
          created_at: new Date(profile.created_at),
          updated_at: new Date(profile.updated_at),
        }
      : undefined,
    registry,
    attached: attached?.map((a) => ({ ...a, attached_at: new Date(a.attached_at) })),
    conversation: {
      cards: cards.map(card),
      calls: calls.map(({ call }) => ({
        ...call,
        published_at: call.published_at === null ? null : new Date(call.published_at),
      })),
      results,
    },
    place:
      place?.thread_id && place.thread_seq !== null
        ? { thread_id: place.thread_id, seq: place.thread_seq }
        : undefined,
  };
}
