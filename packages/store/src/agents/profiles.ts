// Agent profiles (resource.profiles): which registry tools an agent may see (names or
// `<target>.*` patterns), which internal tools it may use, its model and system prompt. Agents
// point at a profile by its uuid, so a profile can be renamed without touching them.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

/**
 * Tools the agent worker implements itself rather than publishing as tool calls. The api
 * validates `allowed_internal_tools` against this list; the worker owns the behaviour.
 */
export const InternalTool = {
  submit_result: 'submit_result',
  list_available_tools: 'list_available_tools',
} as const;
export type InternalTool = (typeof InternalTool)[keyof typeof InternalTool];

export interface ProfileRecord {
  profile_id: string;
  project_id: string;
  name: string;
  allowed_tools: string[];
  allowed_internal_tools: string[];
  model: string | null;
  system_prompt: string;
  created_at: Date;
  updated_at: Date;
}

export interface NewProfile {
  name: string;
  allowed_tools: string[];
  allowed_internal_tools: InternalTool[];
  model?: string | null | undefined;
  system_prompt?: string | undefined;
}

export interface ProfilePatch {
  name?: string | undefined;
  allowed_tools?: string[] | undefined;
  allowed_internal_tools?: InternalTool[] | undefined;
  /** `null` clears the model (the worker's configured default applies). */
  model?: string | null | undefined;
  system_prompt?: string | undefined;
}

export type ProfileUpdate =
  { ok: true; profile: ProfileRecord } | { ok: false; reason: 'not_found' | 'name_taken' };

export type ProfileDelete =
  | { ok: true }
  | { ok: false; reason: 'not_found' }
  /** Agents still point at it (the foreign key is ON DELETE RESTRICT); a few of their ids. */
  | { ok: false; reason: 'in_use'; agents: string[] };

export interface ProfilesRepo {
  /** Undefined when the name is taken in the project. */
  create(projectId: string, p: NewProfile): Promise<ProfileRecord | undefined>;
  get(projectId: string, name: string): Promise<ProfileRecord | undefined>;
  /** Ordered by name; `after` is the last name of the previous page. */
  list(projectId: string, limit: number, after?: string): Promise<ProfileRecord[]>;
  update(projectId: string, name: string, p: ProfilePatch): Promise<ProfileUpdate>;
  delete(projectId: string, name: string): Promise<ProfileDelete>;
}

const COLUMNS = `profile_id, project_id, name, allowed_tools, allowed_internal_tools, model,
  system_prompt, created_at, updated_at`;
/** The columns of a ProfileRecord, of a profile aliased `p`. */
export const PROFILE_OF_P = `p.profile_id, p.project_id, p.name, p.allowed_tools,
  p.allowed_internal_tools, p.model, p.system_prompt, p.created_at, p.updated_at`;

const sqlState = (err: unknown): unknown =>
  typeof err === 'object' && err !== null ? (err as { code?: unknown }).code : undefined;
const UNIQUE_VIOLATION = '23505';
const FOREIGN_KEY_VIOLATION = '23503';

export function createProfilesRepo(db: Db): ProfilesRepo {
  const usedBy = async (projectId: string, name: string) =>
    (
      await db.query<{ agent_id: string }>(
        'profiles_used_by',
        `SELECT a.agent_id FROM resource.agents a
           JOIN resource.profiles p ON p.profile_id = a.profile_id
         WHERE p.project_id = $1 AND p.name = $2 ORDER BY a.agent_id LIMIT 10`,
        [projectId, name],
      )
    ).map((r) => r.agent_id);

  return {
    create: async (projectId, p) =>
      (
        await db.query<ProfileRecord>(
          'profiles_create',
          `INSERT INTO resource.profiles
             (profile_id, project_id, name, allowed_tools, allowed_internal_tools, model, system_prompt)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (project_id, name) DO NOTHING RETURNING ${COLUMNS}`,
          [
            uuidv7(),
            projectId,
            p.name,
            p.allowed_tools,
            p.allowed_internal_tools,
            p.model ?? null,
            p.system_prompt ?? '',
          ],
        )
      )[0],
    get: async (projectId, name) =>
      (
        await db.query<ProfileRecord>(
          'profiles_get',
          `SELECT ${COLUMNS} FROM resource.profiles WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    list: (projectId, limit, after) =>
      db.query<ProfileRecord>(
        'profiles_list',
        `SELECT ${COLUMNS} FROM resource.profiles
         WHERE project_id = $1 AND ($3::text IS NULL OR name > $3) ORDER BY name LIMIT $2`,
        [projectId, limit, after ?? null],
      ),
    update: async (projectId, name, p) => {
      try {
        const row = (
          await db.query<ProfileRecord>(
            'profiles_update',
            // `model` may be set to null, so "absent" travels as a separate flag ($7).
            `UPDATE resource.profiles SET
               name = coalesce($3, name),
               allowed_tools = coalesce($4, allowed_tools),
               allowed_internal_tools = coalesce($5, allowed_internal_tools),
               model = CASE WHEN $7::boolean THEN $6 ELSE model END,
               system_prompt = coalesce($8, system_prompt),
               updated_at = now()
             WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
            [
              projectId,
              name,
              p.name ?? null,
              p.allowed_tools ?? null,
              p.allowed_internal_tools ?? null,
              p.model ?? null,
              p.model !== undefined,
              p.system_prompt ?? null,
            ],
          )
        )[0];
        return row ? { ok: true, profile: row } : { ok: false, reason: 'not_found' };
      } catch (err) {
        if (sqlState(err) === UNIQUE_VIOLATION) return { ok: false, reason: 'name_taken' };
        throw err;
      }
    },
    delete: async (projectId, name) => {
      try {
        const rows = await db.query(
          'profiles_delete',
          'DELETE FROM resource.profiles WHERE project_id = $1 AND name = $2 RETURNING profile_id',
          [projectId, name],
        );
        return rows.length === 1 ? { ok: true } : { ok: false, reason: 'not_found' };
      } catch (err) {
        // Checked by the constraint rather than beforehand, so an agent attached concurrently
        // cannot be left pointing at a deleted profile.
        if (sqlState(err) !== FOREIGN_KEY_VIOLATION) throw err;
        return { ok: false, reason: 'in_use', agents: await usedBy(projectId, name) };
      }
    },
  };
}
