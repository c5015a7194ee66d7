// Everything a step reads before it asks the model, in one statement: the agent's profile, the
// project's tools, the tools attached to the agent, the turn's conversation (its cards, and its
// calls each with its result card) and the task's place in its thread. Six reads were six round
// trips and six statements for Postgres to parse, plan and answer per step; one statement
// aggregating each part to JSON costs one. Dates come back as JSON text and are turned back into
// Dates here, so the records are the same as the repositories' own.
import type { AgentToolRecord } from './agents.ts';
import { AGENT_TOOL } from './agents.ts';
import type { Card } from './cards.ts';
import type { Db } from './db.ts';
import type { ProfileRecord } from './profiles.ts';
import { PROFILE_OF_P } from './profiles.ts';
import type { ToolRecord } from './tools.ts';
import { TOOL_COLUMNS } from './tools.ts';
import { CARD_COLUMNS } from './turn-cards.ts';
import { CALL, type Conversation, type TurnCallRecord, type TurnRecord } from './turns.ts';

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

// Built on first use: turns.ts, which defines CALL, imports this module.
let sql: string | undefined;
const stepContextSql = () =>
  (sql ??= `
SELECT
  (SELECT row_to_json(p) FROM (
     SELECT ${PROFILE_OF_P} FROM resource.agents a
       JOIN resource.profiles p ON p.profile_id = a.profile_id
     WHERE a.project_id = $1 AND a.agent_id = $2) p) AS profile,
  (SELECT coalesce(json_agg(t ORDER BY t.name), '[]') FROM (
     SELECT ${TOOL_COLUMNS} FROM resource.tools WHERE project_id = $1) t) AS registry,
  CASE WHEN EXISTS (SELECT 1 FROM resource.agents WHERE project_id = $1 AND agent_id = $2) THEN
    (SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM (
       SELECT ${AGENT_TOOL} FROM resource.agent_tools at
         JOIN resource.tools t ON t.tool_id = at.tool_id
       WHERE at.project_id = $1 AND at.agent_id = $2) x)
  END AS attached,
  (SELECT coalesce(json_agg(c ORDER BY c.created_at, c.card_id), '[]') FROM (
     SELECT ${CARD_COLUMNS} FROM cards
     WHERE metadata ? 'turn_id' AND metadata->>'turn_id' = $3::text AND project_id = $1) c
  ) AS cards,
  (SELECT coalesce(json_agg(json_build_object('call', c, 'result', r) ORDER BY c.epoch, c.seq),
                   '[]')
   FROM (SELECT ${CALL} FROM state.turn_calls WHERE turn_id = $3::uuid) c
   LEFT JOIN (SELECT ${CARD_COLUMNS} FROM cards WHERE project_id = $1) r
     ON r.card_id = c.result_card_id) AS calls,
  (SELECT row_to_json(k) FROM (
     SELECT thread_id, thread_seq FROM state.tasks WHERE project_id = $1 AND task_id = $4) k
  ) AS place`);

/** A record as JSON gives it: its Date fields are text. */
type Json<T, K extends keyof T> = Omit<T, K> & { [P in K]: string };

interface Row {
  profile: Json<ProfileRecord, 'created_at' | 'updated_at'> | null;
  registry: Json<ToolRecord, 'created_at' | 'updated_at'>[];
  attached: Json<AgentToolRecord, 'attached_at'>[] | null;
  cards: Json<Card, 'created_at'>[];
  calls: {
    call: Omit<TurnCallRecord, 'published_at'> & { published_at: string | null };
    result: Json<Card, 'created_at'> | null;
  }[];
  place: { thread_id: string | null; thread_seq: number | null } | null;
}

const card = (c: Json<Card, 'created_at'>): Card => ({ ...c, created_at: new Date(c.created_at) });

export async function readStepContext(db: Db, t: TurnRecord): Promise<StepContext> {
  const [row] = await db.query<Row>('turns_step_context', stepContextSql(), [
    t.project_id,
    t.agent_id,
    t.turn_id,
    t.task_id,
  ]);
  const { profile, registry, attached, cards, calls, place } = row!;
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
    registry: registry.map((r) => ({
      ...r,
      created_at: new Date(r.created_at),
      updated_at: new Date(r.updated_at),
    })),
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
