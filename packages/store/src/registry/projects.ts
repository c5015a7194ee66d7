// Projects and their API keys (resource.projects, resource.api_keys). Keys are stored as a
// sha256 hash; the key itself exists only in the response that created it.
import { createHash, randomBytes } from 'node:crypto';
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

export interface Project {
  project_id: string;
  name: string;
  created_at: Date;
}

/** What a project key may do: `admin` everything in its project; `caller` call tools, start
 *  tasks, and see and cancel only what it started. */
export const KeyRole = { admin: 'admin', caller: 'caller' } as const;
export type KeyRole = (typeof KeyRole)[keyof typeof KeyRole];

export interface ApiKey {
  key_id: string;
  project_id: string;
  name: string;
  key_prefix: string;
  role: KeyRole;
  created_at: Date;
  last_used_at: Date | null;
  revoked_at: Date | null;
}

/**
 * A project's own settings, shaped like the config.toml sections they override; a missing key
 * follows the deployment's configuration.
 */
export interface ProjectSettings {
  tools?: {
    /** Overrides [tools] pin_definitions for this project's MCP servers. */
    pin_definitions?: boolean;
    /** Overrides [tools] mcp_sampling_llm: [llm] answers sampling no MCP client can. */
    mcp_sampling_llm?: boolean;
  };
  /** Overrides of [quotas]' bus keys; set by the deployment's admin only (PUT .../quotas). */
  quotas?: ProjectQuotas;
}

/** The [quotas] keys a project may have its own value of. */
export interface ProjectQuotas {
  bus_max_bytes?: number;
  bus_max_messages?: number;
  bus_max_message_bytes?: number;
  /** Tool calls a minute; 0 turns the rate off for the project. */
  bus_calls_per_minute?: number;
}

/** A change of settings: a value sets the key, null removes the project's own value. */
export interface ProjectSettingsPatch {
  tools?:
    | {
        pin_definitions?: boolean | null | undefined;
        mcp_sampling_llm?: boolean | null | undefined;
      }
    | undefined;
  quotas?: { [K in keyof ProjectQuotas]?: number | null | undefined } | undefined;
}

/** Applies a patch to settings: null removes a key, and a section left empty goes too. */
export function mergeSettings(s: ProjectSettings, patch: ProjectSettingsPatch): ProjectSettings {
  const out: Record<string, Record<string, unknown>> = {};
  for (const [section, values] of Object.entries(s) as [string, Record<string, unknown>][]) {
    out[section] = { ...values };
  }
  for (const [section, values] of Object.entries(patch) as [string, Record<string, unknown>][]) {
    if (!values) continue;
    const merged = { ...(out[section] ?? {}) };
    for (const [k, v] of Object.entries(values)) {
      if (v === null) delete merged[k];
      else if (v !== undefined) merged[k] = v;
    }
    if (Object.keys(merged).length > 0) out[section] = merged;
    else delete out[section];
  }
  return out;
}

export interface ProjectsRepo {
  /** Undefined when the id is taken. */
  create(projectId: string, name: string): Promise<Project | undefined>;
  get(projectId: string): Promise<Project | undefined>;
  list(limit: number, after?: string): Promise<Project[]>;
  createKey(
    projectId: string,
    name: string,
    role?: KeyRole,
  ): Promise<{ key: string; record: ApiKey }>;
  /**
   * createKey unless the project holds `maxActive` active keys already (undefined then). The
   * project's row is locked while counting: two creations at once cannot both pass the limit.
   */
  createKeyWithin(
    projectId: string,
    name: string,
    role: KeyRole,
    maxActive: number,
  ): Promise<{ key: string; record: ApiKey } | undefined>;
  listKeys(projectId: string): Promise<ApiKey[]>;
  /** False when no active key of that id exists in the project. */
  revokeKey(projectId: string, keyId: string): Promise<boolean>;
  /** The project's own settings; undefined when there is no such project. */
  settings(projectId: string): Promise<ProjectSettings | undefined>;
  /** Applies a patch (see mergeSettings); undefined when there is no such project. */
  updateSettings(
    projectId: string,
    patch: ProjectSettingsPatch,
  ): Promise<ProjectSettings | undefined>;
  /** The project an active key belongs to. */
  resolveKey(key: string): Promise<{ projectId: string; keyId: string; role: KeyRole } | undefined>;
}

export const hashKey = (key: string): string => createHash('sha256').update(key).digest('hex');

/** What createKey makes: `tmk_` and 32 random bytes in base64url. Anything else is no project key. */
export const PROJECT_KEY_PATTERN = /^tmk_[A-Za-z0-9_-]{43}$/;

const KEY_COLUMNS =
  'key_id, project_id, name, key_prefix, role, created_at, last_used_at, revoked_at';

async function insertKey(
  db: Db,
  projectId: string,
  name: string,
  role: KeyRole,
): Promise<{ key: string; record: ApiKey }> {
  const key = `tmk_${randomBytes(32).toString('base64url')}`;
  const rows = await db.query<ApiKey>(
    'projects_create_key',
    `INSERT INTO resource.api_keys (key_id, project_id, name, key_hash, key_prefix, role)
     VALUES ($1, $2, $3, $4, $5, $6) RETURNING ${KEY_COLUMNS}`,
    [uuidv7(), projectId, name, hashKey(key), key.slice(0, 12), role],
  );
  return { key, record: rows[0]! };
}

export function createProjectsRepo(db: Db): ProjectsRepo {
  return {
    create: async (projectId, name) =>
      (
        await db.query<Project>(
          'projects_create',
          `INSERT INTO resource.projects (project_id, name) VALUES ($1, $2)
           ON CONFLICT (project_id) DO NOTHING RETURNING project_id, name, created_at`,
          [projectId, name],
        )
      )[0],
    get: async (projectId) =>
      (
        await db.query<Project>(
          'projects_get',
          'SELECT project_id, name, created_at FROM resource.projects WHERE project_id = $1',
          [projectId],
        )
      )[0],
    list: (limit, after) =>
      db.query<Project>(
        'projects_list',
        `SELECT project_id, name, created_at FROM resource.projects
         WHERE $2::text IS NULL OR project_id > $2 ORDER BY project_id LIMIT $1`,
        [limit, after ?? null],
      ),
    createKey: (projectId, name, role = KeyRole.admin) => insertKey(db, projectId, name, role),
    createKeyWithin: (projectId, name, role, maxActive) =>
      db.tx(async (tx) => {
        await tx.query(
          'projects_lock_for_key',
          'SELECT 1 FROM resource.projects WHERE project_id = $1 FOR UPDATE',
          [projectId],
        );
        const [row] = await tx.query<{ active: number }>(
          'projects_active_keys',
          `SELECT count(*)::int AS active FROM resource.api_keys
           WHERE project_id = $1 AND revoked_at IS NULL`,
          [projectId],
        );
        if ((row?.active ?? 0) >= maxActive) return undefined;
        return insertKey(tx, projectId, name, role);
      }),
    listKeys: (projectId) =>
      db.query<ApiKey>(
        'projects_list_keys',
        `SELECT ${KEY_COLUMNS} FROM resource.api_keys WHERE project_id = $1 ORDER BY created_at`,
        [projectId],
      ),
    revokeKey: async (projectId, keyId) =>
      (
        await db.query(
          'projects_revoke_key',
          `UPDATE resource.api_keys SET revoked_at = now()
           WHERE project_id = $1 AND key_id = $2 AND revoked_at IS NULL RETURNING key_id`,
          [projectId, keyId],
        )
      ).length === 1,
    settings: async (projectId) =>
      (
        await db.query<{ settings: ProjectSettings }>(
          'projects_settings',
          'SELECT settings FROM resource.projects WHERE project_id = $1',
          [projectId],
        )
      )[0]?.settings,
    updateSettings: (projectId, patch) =>
      db.tx(async (tx) => {
        // The row lock orders two patches: the second merges into the first's result.
        const row = (
          await tx.query<{ settings: ProjectSettings }>(
            'projects_settings_lock',
            'SELECT settings FROM resource.projects WHERE project_id = $1 FOR UPDATE',
            [projectId],
          )
        )[0];
        if (!row) return undefined;
        const next = mergeSettings(row.settings, patch);
        await tx.query(
          'projects_settings_update',
          'UPDATE resource.projects SET settings = $2 WHERE project_id = $1',
          [projectId, next],
        );
        return next;
      }),
    resolveKey: async (key) => {
      const row = (
        await db.query<{ project_id: string; key_id: string; role: KeyRole }>(
          'projects_resolve_key',
          `SELECT project_id, key_id, role FROM resource.api_keys
           WHERE key_hash = $1 AND revoked_at IS NULL`,
          [hashKey(key)],
        )
      )[0];
      return row ? { projectId: row.project_id, keyId: row.key_id, role: row.role } : undefined;
    },
  };
}
