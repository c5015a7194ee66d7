// Skill environments (state.skill_envs): the durable job that installs a skill version's
// dependencies once per sandbox provider. `claim` decides, in the database, which request of
// which instance builds: the insert of a new row, the retry of a failed one, or the takeover of
// a `building` row whose owner stopped renewing its lease. Everyone else reads the row until it
// leaves `building`. Every read is scoped by project.
import type { Db } from '../core/db.ts';

export const SkillEnvStatus = { building: 'building', ready: 'ready', failed: 'failed' } as const;
export type SkillEnvStatus = (typeof SkillEnvStatus)[keyof typeof SkillEnvStatus];

export interface SkillEnvKey {
  projectId: string;
  skillName: string;
  version: string;
  provider: 'local' | 'e2b';
}

export interface SkillEnvRecord {
  project_id: string;
  skill_name: string;
  version: string;
  provider: 'local' | 'e2b';
  status: SkillEnvStatus;
  kinds: string[];
  owner_instance: string;
  lease_until: Date;
  location: string | null;
  sandbox_id: string | null;
  output_tail: string;
  error: Record<string, unknown> | null;
  builds: number;
  started_at: Date;
  finished_at: Date | null;
  updated_at: Date;
}

export interface SkillEnvsRepo {
  /**
   * Makes this instance the builder when no one else is: the row is new, failed, or `building`
   * past its lease. Returns the claimed row, or undefined when the row is someone else's (read
   * it with `get`) or already ready.
   */
  claim(
    key: SkillEnvKey,
    kinds: readonly string[],
    owner: string,
    leaseMs: number,
  ): Promise<SkillEnvRecord | undefined>;
  get(key: SkillEnvKey): Promise<SkillEnvRecord | undefined>;
  /** Every environment of one skill's versions (the api's view). */
  listForSkill(projectId: string, skillName: string): Promise<SkillEnvRecord[]>;
  /** Renews the owner's lease; false when the row is no longer its build. */
  renew(key: SkillEnvKey, owner: string, leaseMs: number): Promise<boolean>;
  /** Records where the build's files are, while it runs (so a takeover can clean them up). */
  setSandbox(key: SkillEnvKey, owner: string, sandboxId: string, location: string): Promise<void>;
  /**
   * Deletes up to `limit` environments nothing refers to any more, last written more than
   * `olderThanMs` ago: a skill version that no longer exists (its skill deleted), an npm package
   * no MCP server of the project runs, anything of a deleted project. A build in progress is
   * left alone. Returns the deleted rows, whose sandboxes the caller destroys.
   */
  deleteUnused(olderThanMs: number, limit: number): Promise<UnusedSkillEnv[]>;
  /** Ends the owner's build; undefined when it was no longer its own. */
  finish(
    key: SkillEnvKey,
    owner: string,
    end: {
      status: 'ready' | 'failed';
      outputTail: string;
      error: Record<string, unknown> | null;
    },
  ): Promise<SkillEnvRecord | undefined>;
}

/** An environment deleted as unused: where its files were. */
export interface UnusedSkillEnv {
  project_id: string;
  skill_name: string;
  version: string;
  provider: 'local' | 'e2b';
  sandbox_id: string | null;
  location: string | null;
}

/** The prefix of an MCP server package's environment (services/tools, package-env.ts). */
const MCP_PACKAGE = 'mcp-npm:';

// An MCP package's version column is the sha256 of `npm\0<identifier>\0<version>` (a text
// value cannot hold NUL, so the digest is taken over bytes).
const DELETE_UNUSED_SQL = `
DELETE FROM state.skill_envs e USING (
  SELECT x.project_id, x.skill_name, x.version, x.provider FROM state.skill_envs x
  WHERE x.status <> 'building'
    AND x.updated_at < now() - make_interval(secs => $1::float8 / 1000)
    AND NOT EXISTS (
      SELECT 1 FROM resource.mcp_servers s
      WHERE x.skill_name LIKE '${MCP_PACKAGE}%' AND s.project_id = x.project_id
        AND s.package->>'identifier' = substr(x.skill_name, ${MCP_PACKAGE.length + 1})
        AND encode(sha256('npm'::bytea || '\\x00'::bytea
                          || convert_to(s.package->>'identifier', 'UTF8') || '\\x00'::bytea
                          || convert_to(s.package->>'version', 'UTF8')), 'hex') = x.version)
    AND NOT EXISTS (
      SELECT 1 FROM resource.skills k JOIN resource.skill_versions v ON v.skill_id = k.skill_id
      WHERE x.skill_name NOT LIKE '${MCP_PACKAGE}%' AND k.project_id = x.project_id
        AND k.name = x.skill_name AND v.version = x.version)
  ORDER BY x.updated_at
  LIMIT $2
  FOR UPDATE OF x SKIP LOCKED
) d
WHERE e.project_id = d.project_id AND e.skill_name = d.skill_name AND e.version = d.version
  AND e.provider = d.provider
RETURNING e.project_id, e.skill_name, e.version, e.provider, e.sandbox_id, e.location`;

const COLS = `project_id, skill_name, version, provider, status, kinds, owner_instance, lease_until,
  location, sandbox_id, output_tail, error, builds, started_at, finished_at, updated_at`;
const KEY = `project_id = $1 AND skill_name = $2 AND version = $3 AND provider = $4`;
const keyValues = (k: SkillEnvKey) => [k.projectId, k.skillName, k.version, k.provider];

export function createSkillEnvsRepo(db: Db): SkillEnvsRepo {
  return {
    async claim(key, kinds, owner, leaseMs) {
      const rows = await db.query<SkillEnvRecord>(
        'skill_envs_claim',
        `INSERT INTO state.skill_envs AS e
           (project_id, skill_name, version, provider, status, kinds, owner_instance, lease_until)
         VALUES ($1, $2, $3, $4, 'building', $5, $6, now() + make_interval(secs => $7::float8 / 1000))
         ON CONFLICT (project_id, skill_name, version, provider) DO UPDATE SET
           status = 'building', kinds = EXCLUDED.kinds, owner_instance = EXCLUDED.owner_instance,
           lease_until = EXCLUDED.lease_until, output_tail = '', error = NULL,
           location = NULL, sandbox_id = NULL, builds = e.builds + 1,
           started_at = now(), finished_at = NULL, updated_at = now()
         WHERE e.status = 'failed' OR (e.status = 'building' AND e.lease_until < now())
         RETURNING ${COLS}`,
        [...keyValues(key), kinds, owner, leaseMs],
      );
      return rows[0];
    },
    async get(key) {
      const rows = await db.query<SkillEnvRecord>(
        'skill_envs_get',
        `SELECT ${COLS} FROM state.skill_envs WHERE ${KEY}`,
        keyValues(key),
      );
      return rows[0];
    },
    deleteUnused(olderThanMs, limit) {
      return db.query<UnusedSkillEnv>('skill_envs_delete_unused', DELETE_UNUSED_SQL, [
        olderThanMs,
        limit,
      ]);
    },
    listForSkill(projectId, skillName) {
      return db.query<SkillEnvRecord>(
        'skill_envs_list',
        `SELECT ${COLS} FROM state.skill_envs WHERE project_id = $1 AND skill_name = $2
         ORDER BY started_at`,
        [projectId, skillName],
      );
    },
    async renew(key, owner, leaseMs) {
      const rows = await db.query(
        'skill_envs_renew',
        `UPDATE state.skill_envs
            SET lease_until = now() + make_interval(secs => $6::float8 / 1000), updated_at = now()
          WHERE ${KEY} AND owner_instance = $5 AND status = 'building'
         RETURNING 1`,
        [...keyValues(key), owner, leaseMs],
      );
      return rows.length > 0;
    },
    async setSandbox(key, owner, sandboxId, location) {
      await db.query(
        'skill_envs_set_sandbox',
        `UPDATE state.skill_envs SET sandbox_id = $6, location = $7, updated_at = now()
          WHERE ${KEY} AND owner_instance = $5 AND status = 'building'`,
        [...keyValues(key), owner, sandboxId, location],
      );
    },
    async finish(key, owner, end) {
      const rows = await db.query<SkillEnvRecord>(
        'skill_envs_finish',
        `UPDATE state.skill_envs
            SET status = $6, output_tail = $7, error = $8, finished_at = now(), updated_at = now()
          WHERE ${KEY} AND owner_instance = $5 AND status = 'building'
         RETURNING ${COLS}`,
        [...keyValues(key), owner, end.status, end.outputTail, end.error],
      );
      return rows[0];
    },
  };
}
