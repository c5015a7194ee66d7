// The tool registry (resource.tools): what a project's agents may call, with the JSON Schema of
// each tool's parameters. `skills.*` and `builtin.*` are seeded when a project is created.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from './db.ts';

export const ToolOrigin = { skills: 'skills', builtin: 'builtin', external: 'external' } as const;
export type ToolOrigin = (typeof ToolOrigin)[keyof typeof ToolOrigin];

export interface ToolRecord {
  tool_id: string;
  project_id: string;
  name: string;
  target: string;
  description: string;
  category: string;
  tags: string[];
  parameters: Record<string, unknown>;
  origin: ToolOrigin;
  options: Record<string, unknown>;
  enabled: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface NewTool {
  name: string;
  target: string;
  description: string;
  category: string;
  tags?: string[];
  parameters: Record<string, unknown>;
  origin: ToolOrigin;
  options?: Record<string, unknown>;
}

export interface ToolFilter {
  category?: string | undefined;
  tag?: string | undefined;
  /** Matched case-insensitively against name and description. */
  q?: string | undefined;
  origin?: ToolOrigin | undefined;
}

export interface ToolPatch {
  description?: string | undefined;
  category?: string | undefined;
  tags?: string[] | undefined;
  parameters?: Record<string, unknown> | undefined;
  options?: Record<string, unknown> | undefined;
  enabled?: boolean | undefined;
}

export interface ToolsRepo {
  /** Undefined when the name is taken in the project. */
  create(projectId: string, t: NewTool): Promise<ToolRecord | undefined>;
  /** Inserts many at once, skipping names that exist (project bootstrap). */
  seed(projectId: string, tools: NewTool[]): Promise<number>;
  get(projectId: string, name: string): Promise<ToolRecord | undefined>;
  list(projectId: string, f: ToolFilter): Promise<ToolRecord[]>;
  update(projectId: string, name: string, p: ToolPatch): Promise<ToolRecord | undefined>;
  delete(projectId: string, name: string): Promise<boolean>;
}

const COLUMNS = `tool_id, project_id, name, target, description, category, tags, parameters, origin,
  options, enabled, created_at, updated_at`;

export function createToolsRepo(db: Db): ToolsRepo {
  const insert = (projectId: string, t: NewTool) => [
    uuidv7(),
    projectId,
    t.name,
    t.target,
    t.description,
    t.category,
    t.tags ?? [],
    t.parameters,
    t.origin,
    t.options ?? {},
  ];
  const INSERT = `INSERT INTO resource.tools
      (tool_id, project_id, name, target, description, category, tags, parameters, origin, options)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)
    ON CONFLICT (project_id, name) DO NOTHING RETURNING ${COLUMNS}`;
  return {
    create: async (projectId, t) => (await db.query<ToolRecord>('tools_create', INSERT, insert(projectId, t)))[0],
    seed: async (projectId, tools) => {
      let n = 0;
      for (const t of tools) n += (await db.query('tools_create', INSERT, insert(projectId, t))).length;
      return n;
    },
    get: async (projectId, name) =>
      (
        await db.query<ToolRecord>(
          'tools_get',
          `SELECT ${COLUMNS} FROM resource.tools WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    list: (projectId, f) =>
      db.query<ToolRecord>(
        'tools_list',
        `SELECT ${COLUMNS} FROM resource.tools
         WHERE project_id = $1
           AND ($2::text IS NULL OR category = $2)
           AND ($3::text IS NULL OR $3 = ANY (tags))
           AND ($4::text IS NULL OR name ILIKE '%' || $4 || '%' OR description ILIKE '%' || $4 || '%')
           AND ($5::text IS NULL OR origin = $5)
         ORDER BY name`,
        [projectId, f.category ?? null, f.tag ?? null, f.q ?? null, f.origin ?? null],
      ),
    update: async (projectId, name, p) =>
      (
        await db.query<ToolRecord>(
          'tools_update',
          `UPDATE resource.tools SET
             description = coalesce($3, description),
             category = coalesce($4, category),
             tags = coalesce($5, tags),
             parameters = coalesce($6, parameters),
             options = coalesce($7, options),
             enabled = coalesce($8, enabled),
             updated_at = now()
           WHERE project_id = $1 AND name = $2 RETURNING ${COLUMNS}`,
          [
            projectId,
            name,
            p.description ?? null,
            p.category ?? null,
            p.tags ?? null,
            p.parameters ?? null,
            p.options ?? null,
            p.enabled ?? null,
          ],
        )
      )[0],
    delete: async (projectId, name) =>
      (
        await db.query(
          'tools_delete',
          'DELETE FROM resource.tools WHERE project_id = $1 AND name = $2 RETURNING tool_id',
          [projectId, name],
        )
      ).length === 1,
  };
}
