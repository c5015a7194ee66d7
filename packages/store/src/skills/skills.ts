// Skills and their versions (resource.skills, resource.skill_versions). A version is the sha256
// of the uploaded zip; uploading the same zip again changes nothing.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

export interface SkillRecord {
  skill_id: string;
  project_id: string;
  name: string;
  description: string;
  active_version: string | null;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
  versions: number;
}

export interface SkillVersion {
  version: string;
  storage_uri: string;
  size_bytes: number;
  description: string;
  front_matter: Record<string, unknown>;
  files: number;
  created_at: Date;
}

export interface NewSkillVersion {
  name: string;
  description: string;
  version: string;
  storageUri: string;
  sizeBytes: number;
  frontMatter: Record<string, unknown>;
  files: number;
  /** Make this version the active one. */
  activate: boolean;
}

export interface SkillsRepo {
  /** Adds the version (creating the skill on first upload); `created` is false for a re-upload. */
  addVersion(
    projectId: string,
    v: NewSkillVersion,
  ): Promise<{ skill: SkillRecord; created: boolean }>;
  list(projectId: string): Promise<SkillRecord[]>;
  get(projectId: string, name: string): Promise<SkillRecord | undefined>;
  versions(skillId: string): Promise<SkillVersion[]>;
  /** False when the skill has no such version. */
  activate(projectId: string, name: string, version: string): Promise<boolean>;
  setEnabled(projectId: string, name: string, enabled: boolean): Promise<SkillRecord | undefined>;
  /** The deleted skill's versions (their zips are the caller's to remove), or undefined. */
  delete(projectId: string, name: string): Promise<SkillVersion[] | undefined>;
}

const SKILL = `s.skill_id, s.project_id, s.name, s.description, s.active_version, s.enabled,
  s.created_at, s.updated_at,
  (SELECT count(*)::int FROM resource.skill_versions v WHERE v.skill_id = s.skill_id) AS versions`;
const VERSION = `version, storage_uri, size_bytes::float8 AS size_bytes, description, front_matter,
  files, created_at`;

export function createSkillsRepo(db: Db): SkillsRepo {
  const get = async (projectId: string, name: string) =>
    (
      await db.query<SkillRecord>(
        'skills_get',
        `SELECT ${SKILL} FROM resource.skills s WHERE s.project_id = $1 AND s.name = $2`,
        [projectId, name],
      )
    )[0];
  return {
    addVersion: (projectId, v) =>
      db.tx(async (tx) => {
        // The skill row is created or, on a new upload, takes the new description.
        const skill = (
          await tx.query<{ skill_id: string }>(
            'skills_upsert',
            `INSERT INTO resource.skills (skill_id, project_id, name, description)
             VALUES ($1, $2, $3, $4)
             ON CONFLICT (project_id, name) DO UPDATE SET updated_at = now()
             RETURNING skill_id`,
            [uuidv7(), projectId, v.name, v.description],
          )
        )[0]!;
        const inserted = await tx.query(
          'skills_add_version',
          `INSERT INTO resource.skill_versions
             (skill_id, version, storage_uri, size_bytes, description, front_matter, files)
           VALUES ($1, $2, $3, $4, $5, $6, $7)
           ON CONFLICT (skill_id, version) DO NOTHING RETURNING version`,
          [
            skill.skill_id,
            v.version,
            v.storageUri,
            v.sizeBytes,
            v.description,
            v.frontMatter,
            v.files,
          ],
        );
        if (v.activate) {
          await tx.query(
            'skills_set_active',
            `UPDATE resource.skills SET active_version = $2, description = $3, updated_at = now()
             WHERE skill_id = $1`,
            [skill.skill_id, v.version, v.description],
          );
        }
        const record = (
          await tx.query<SkillRecord>(
            'skills_get',
            `SELECT ${SKILL} FROM resource.skills s WHERE s.project_id = $1 AND s.name = $2`,
            [projectId, v.name],
          )
        )[0]!;
        return { skill: record, created: inserted.length === 1 };
      }),
    list: (projectId) =>
      db.query<SkillRecord>(
        'skills_list',
        `SELECT ${SKILL} FROM resource.skills s WHERE s.project_id = $1 ORDER BY s.name`,
        [projectId],
      ),
    get,
    versions: (skillId) =>
      db.query<SkillVersion>(
        'skills_versions',
        `SELECT ${VERSION} FROM resource.skill_versions WHERE skill_id = $1 ORDER BY created_at DESC`,
        [skillId],
      ),
    activate: async (projectId, name, version) =>
      (
        await db.query(
          'skills_activate',
          `UPDATE resource.skills s SET active_version = v.version, description = v.description,
             updated_at = now()
           FROM resource.skill_versions v
           WHERE s.project_id = $1 AND s.name = $2 AND v.skill_id = s.skill_id AND v.version = $3
           RETURNING s.skill_id`,
          [projectId, name, version],
        )
      ).length === 1,
    setEnabled: async (projectId, name, enabled) => {
      const rows = await db.query(
        'skills_set_enabled',
        `UPDATE resource.skills SET enabled = $3, updated_at = now()
         WHERE project_id = $1 AND name = $2 RETURNING skill_id`,
        [projectId, name, enabled],
      );
      return rows.length === 1 ? get(projectId, name) : undefined;
    },
    delete: (projectId, name) =>
      db.tx(async (tx) => {
        const skill = (
          await tx.query<{ skill_id: string }>(
            'skills_find',
            'SELECT skill_id FROM resource.skills WHERE project_id = $1 AND name = $2 FOR UPDATE',
            [projectId, name],
          )
        )[0];
        if (!skill) return undefined;
        const versions = await tx.query<SkillVersion>(
          'skills_versions',
          `SELECT ${VERSION} FROM resource.skill_versions WHERE skill_id = $1 ORDER BY created_at DESC`,
          [skill.skill_id],
        );
        await tx.query('skills_delete', 'DELETE FROM resource.skills WHERE skill_id = $1', [
          skill.skill_id,
        ]);
        return versions;
      }),
  };
}
