// Schedules (resource.schedules) and their firings (state.schedule_firings). The api's scheduler
// claims due schedules with FOR UPDATE SKIP LOCKED inside a transaction, records the firing and
// moves next_fire_at on in that same transaction: two instances never fire one tick.
import type { Db } from '../core/db.ts';

export const ScheduleKind = { tool: 'tool', agent: 'agent' } as const;
export type ScheduleKind = (typeof ScheduleKind)[keyof typeof ScheduleKind];
export const CatchUp = { skip: 'skip', once: 'once' } as const;
export type CatchUp = (typeof CatchUp)[keyof typeof CatchUp];

export interface Schedule {
  project_id: string;
  name: string;
  cron: string;
  timezone: string;
  kind: ScheduleKind;
  tool: string | null;
  arguments: Record<string, unknown> | null;
  agent_id: string | null;
  input: unknown;
  channel: string;
  catch_up: CatchUp;
  paused: boolean;
  next_fire_at: Date | null;
  last_fire_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface NewSchedule {
  projectId: string;
  name: string;
  cron: string;
  timezone: string;
  kind: ScheduleKind;
  tool?: string | undefined;
  arguments?: Record<string, unknown> | undefined;
  agentId?: string | undefined;
  input?: unknown;
  channel: string;
  catchUp: CatchUp;
  paused: boolean;
  nextFireAt: Date | null;
}

export interface Firing {
  project_id: string;
  name: string;
  tick_at: Date;
  tool_call_id: string | null;
  task_id: string | null;
  missed: number;
  fired_at: Date;
  published_at: Date | null;
  fired_by: string;
}

export interface NewFiring {
  projectId: string;
  name: string;
  tickAt: Date;
  toolCallId?: string | undefined;
  taskId?: string | undefined;
  missed: number;
  firedBy: string;
}

export interface SchedulesRepo {
  /** Undefined when the project already has a schedule of that name. */
  create(s: NewSchedule): Promise<Schedule | undefined>;
  get(projectId: string, name: string): Promise<Schedule | undefined>;
  count(projectId: string): Promise<number>;
  /** The project's schedules by name, `limit` after the `after` name. */
  list(projectId: string, o: { limit: number; after?: string | undefined }): Promise<Schedule[]>;
  /** Pauses or resumes; a resumed schedule's next tick is given by the caller. */
  setPaused(
    projectId: string,
    name: string,
    paused: boolean,
    nextFireAt: Date | null,
  ): Promise<Schedule | undefined>;
  delete(projectId: string, name: string): Promise<boolean>;
  /** Due schedules, locked for this transaction; others' locked rows are skipped. */
  claimDue(now: Date, limit: number): Promise<Schedule[]>;
  /** Records a firing and moves the schedule on, in the caller's transaction. */
  fired(f: NewFiring, nextFireAt: Date | null): Promise<void>;
  /** Moves a schedule on without firing (missed ticks under `skip`). */
  advance(projectId: string, name: string, nextFireAt: Date | null): Promise<void>;
  markPublished(projectId: string, name: string, tickAt: Date): Promise<void>;
  /** Firings recorded before `before` whose message is not known to be out. */
  unpublished(before: Date, limit: number): Promise<Firing[]>;
  /** A schedule's firings, newest first. */
  firings(projectId: string, name: string, limit: number): Promise<Firing[]>;
}

const COLUMNS = `project_id, name, cron, timezone, kind, tool, arguments, agent_id, input, channel,
  catch_up, paused, next_fire_at, last_fire_at, created_at, updated_at`;
const FIRING = `project_id, name, tick_at, tool_call_id, task_id, missed, fired_at, published_at,
  fired_by`;

export function createSchedulesRepo(db: Db): SchedulesRepo {
  return {
    create: async (s) =>
      (
        await db.query<Schedule>(
          'schedules_create',
          `INSERT INTO resource.schedules (project_id, name, cron, timezone, kind, tool, arguments,
             agent_id, input, channel, catch_up, paused, next_fire_at)
           VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9::jsonb, $10, $11, $12, $13)
           ON CONFLICT (project_id, name) DO NOTHING
           RETURNING ${COLUMNS}`,
          [
            s.projectId,
            s.name,
            s.cron,
            s.timezone,
            s.kind,
            s.tool ?? null,
            s.arguments === undefined ? null : JSON.stringify(s.arguments),
            s.agentId ?? null,
            s.input === undefined ? null : JSON.stringify(s.input),
            s.channel,
            s.catchUp,
            s.paused,
            s.nextFireAt,
          ],
        )
      )[0],
    get: async (projectId, name) =>
      (
        await db.query<Schedule>(
          'schedules_get',
          `SELECT ${COLUMNS} FROM resource.schedules WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    count: async (projectId) =>
      Number(
        (
          await db.query<{ n: string }>(
            'schedules_count',
            `SELECT count(*) AS n FROM resource.schedules WHERE project_id = $1`,
            [projectId],
          )
        )[0]?.n ?? 0,
      ),
    list: (projectId, o) =>
      db.query<Schedule>(
        'schedules_list',
        `SELECT ${COLUMNS} FROM resource.schedules
         WHERE project_id = $1 AND ($2::text IS NULL OR name > $2)
         ORDER BY name LIMIT $3`,
        [projectId, o.after ?? null, o.limit],
      ),
    setPaused: async (projectId, name, paused, nextFireAt) =>
      (
        await db.query<Schedule>(
          'schedules_set_paused',
          `UPDATE resource.schedules SET paused = $3, next_fire_at = $4, updated_at = now()
           WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
          [projectId, name, paused, nextFireAt],
        )
      )[0],
    delete: async (projectId, name) =>
      (
        await db.query(
          'schedules_delete',
          `DELETE FROM resource.schedules WHERE project_id = $1 AND name = $2 RETURNING name`,
          [projectId, name],
        )
      ).length > 0,
    claimDue: (now, limit) =>
      db.query<Schedule>(
        'schedules_claim_due',
        `SELECT ${COLUMNS} FROM resource.schedules
         WHERE NOT paused AND next_fire_at <= $1
         ORDER BY next_fire_at LIMIT $2
         FOR UPDATE SKIP LOCKED`,
        [now, limit],
      ),
    fired: async (f, nextFireAt) => {
      await db.query(
        'schedules_firing_insert',
        `INSERT INTO state.schedule_firings (project_id, name, tick_at, tool_call_id, task_id,
           missed, fired_by)
         VALUES ($1, $2, $3, $4, $5, $6, $7)`,
        [
          f.projectId,
          f.name,
          f.tickAt,
          f.toolCallId ?? null,
          f.taskId ?? null,
          f.missed,
          f.firedBy,
        ],
      );
      await db.query(
        'schedules_fired',
        `UPDATE resource.schedules SET last_fire_at = $3, next_fire_at = $4
         WHERE project_id = $1 AND name = $2`,
        [f.projectId, f.name, f.tickAt, nextFireAt],
      );
    },
    advance: async (projectId, name, nextFireAt) => {
      await db.query(
        'schedules_advance',
        `UPDATE resource.schedules SET next_fire_at = $3 WHERE project_id = $1 AND name = $2`,
        [projectId, name, nextFireAt],
      );
    },
    markPublished: async (projectId, name, tickAt) => {
      await db.query(
        'schedules_firing_published',
        `UPDATE state.schedule_firings SET published_at = now()
         WHERE project_id = $1 AND name = $2 AND tick_at = $3 AND published_at IS NULL`,
        [projectId, name, tickAt],
      );
    },
    unpublished: (before, limit) =>
      db.query<Firing>(
        'schedules_firings_unpublished',
        `SELECT ${FIRING} FROM state.schedule_firings
         WHERE published_at IS NULL AND fired_at < $1
           AND (tool_call_id IS NOT NULL OR task_id IS NOT NULL)
         ORDER BY fired_at LIMIT $2`,
        [before, limit],
      ),
    firings: (projectId, name, limit) =>
      db.query<Firing>(
        'schedules_firings',
        `SELECT ${FIRING} FROM state.schedule_firings
         WHERE project_id = $1 AND name = $2 ORDER BY tick_at DESC LIMIT $3`,
        [projectId, name, limit],
      ),
  };
}
