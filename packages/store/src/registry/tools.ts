// The tool registry (resource.tools): what a project's agents may call, with the JSON Schema of
// each tool's parameters. `skills.*` and `builtin.*` are seeded when a project is created. The
// origin says who runs a tool: the skills service (skills, builtin), the tools service from the
// tool's `spec` (http, mcp), or a process of the tool's own (external).
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';
import type { PendingDefinition } from './tool-definitions.ts';

export const ToolOrigin = {
  skills: 'skills',
  builtin: 'builtin',
  external: 'external',
  http: 'http',
  mcp: 'mcp',
} as const;
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
  /** How the tools service runs an http or mcp tool; `{}` for the others. */
  spec: Record<string, unknown>;
  /** MCP tool annotations (readOnlyHint, destructiveHint, idempotentHint, openWorldHint). */
  annotations: ToolAnnotations;
  /** The JSON Schema of the tool's structured result, when one is known. */
  output_schema: Record<string, unknown> | null;
  enabled: boolean;
  /** MCP tools: the sha256 of the approved definition (pinned when first registered). */
  definition_hash: string | null;
  /** MCP tools: a changed definition a refresh found, held until approved. */
  pending_definition: PendingDefinition | null;
  /** The version of the API or server the tool came from (an OpenAPI document's info.version). */
  version: string | null;
  /** Still callable, but hidden from lists unless asked for; calls carry a deprecation note. */
  deprecated: boolean;
  deprecation_message: string | null;
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
  spec?: Record<string, unknown>;
  annotations?: ToolAnnotations | undefined;
  output_schema?: Record<string, unknown> | null | undefined;
  version?: string | null | undefined;
  deprecated?: boolean | undefined;
  deprecation_message?: string | null | undefined;
}

/** The MCP tool annotations the registry keeps; a missing hint is unknown. */
export interface ToolAnnotations {
  readOnlyHint?: boolean;
  destructiveHint?: boolean;
  idempotentHint?: boolean;
  openWorldHint?: boolean;
}

export interface ToolFilter {
  category?: string | undefined;
  /** Tools carrying every one of these tags. */
  tags?: readonly string[] | undefined;
  /** Deprecated tools are listed too (default: they are). */
  includeDeprecated?: boolean | undefined;
  /** Matched case-insensitively against name and description. */
  q?: string | undefined;
  origin?: ToolOrigin | undefined;
  /** Page size (all when absent) and the last name of the previous page. */
  limit?: number | undefined;
  after?: string | undefined;
}

/** How a tool has been used, from state.tool_executions (kept after the tool is deleted). */
export interface ToolUsage {
  calls: number;
  succeeded: number;
  failed: number;
  timeout: number;
  canceled: number;
  /** Queued or running now. */
  active: number;
  avg_duration_ms: number | null;
  last_called_at: Date | null;
}

export interface ToolPatch {
  description?: string | undefined;
  category?: string | undefined;
  tags?: string[] | undefined;
  parameters?: Record<string, unknown> | undefined;
  options?: Record<string, unknown> | undefined;
  spec?: Record<string, unknown> | undefined;
  enabled?: boolean | undefined;
  annotations?: ToolAnnotations | undefined;
  /** null removes the output schema. */
  output_schema?: Record<string, unknown> | null | undefined;
  /** null removes the version. */
  version?: string | null | undefined;
  deprecated?: boolean | undefined;
  /** null removes the message. */
  deprecation_message?: string | null | undefined;
}

/** How many tools of a filtered set fall in each category and carry each tag. */
export interface ToolFacets {
  total: number;
  categories: Record<string, number>;
  tags: Record<string, number>;
}

export interface ToolsRepo {
  /** Undefined when the name is taken in the project. */
  create(projectId: string, t: NewTool): Promise<ToolRecord | undefined>;
  /** Inserts many at once, skipping names that exist (project bootstrap). */
  seed(projectId: string, tools: NewTool[]): Promise<number>;
  /**
   * Brings the reserved tools (`skills.*`, `builtin.*`) of every project to the definitions
   * given (description and parameters), where they differ; returns the rows changed. Their
   * schemas belong to the code that serves them, so a project seeded by an older release gets
   * the current ones.
   */
  syncReserved(tools: NewTool[]): Promise<number>;
  get(projectId: string, name: string): Promise<ToolRecord | undefined>;
  list(projectId: string, f: ToolFilter): Promise<ToolRecord[]>;
  /** Counts over every tool the filter matches (its page size and cursor are ignored). */
  facets(projectId: string, f: ToolFilter): Promise<ToolFacets>;
  update(projectId: string, name: string, p: ToolPatch): Promise<ToolRecord | undefined>;
  delete(projectId: string, name: string): Promise<boolean>;
  /**
   * Makes the held definition of a tool the approved one. `expectHash`, when given, must be the
   * pending definition's hash (so an approval cannot take a newer change it never saw).
   * Undefined: no such tool; 'none': nothing pending; 'stale': another definition is pending.
   */
  approveDefinition(
    projectId: string,
    name: string,
    expectHash?: string,
  ): Promise<ToolRecord | 'none' | 'stale' | undefined>;
  usage(projectId: string, name: string): Promise<ToolUsage>;
}

export const TOOL_COLUMNS = `tool_id, project_id, name, target, description, category, tags, parameters, origin,
  options, spec, annotations, output_schema, enabled, definition_hash, pending_definition,
  version, deprecated, deprecation_message, created_at, updated_at`;

/**
 * The WHERE clause of a filtered list, over parameters $1 (project) to $6; shared by list and
 * facets so the counts describe exactly the set listed.
 */
const FILTER = `project_id = $1
  AND ($2::text IS NULL OR category = $2)
  AND ($3::text[] IS NULL OR tags @> $3::text[])
  -- strpos, not ILIKE: '_' and '%' in a search (run_cmd) are literal characters.
  AND ($4::text IS NULL OR strpos(lower(name), lower($4)) > 0
       OR strpos(lower(description), lower($4)) > 0)
  AND ($5::text IS NULL OR origin = $5)
  AND ($6::boolean OR NOT deprecated)`;
const filterParams = (projectId: string, f: ToolFilter) => [
  projectId,
  f.category ?? null,
  f.tags && f.tags.length > 0 ? [...f.tags] : null,
  f.q ?? null,
  f.origin ?? null,
  f.includeDeprecated ?? true,
];

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
    t.spec ?? {},
    t.annotations ?? {},
    t.output_schema ?? null,
    t.version ?? null,
    t.deprecated ?? false,
    t.deprecation_message ?? null,
  ];
  const INSERT = `INSERT INTO resource.tools
      (tool_id, project_id, name, target, description, category, tags, parameters, origin, options,
       spec, annotations, output_schema, version, deprecated, deprecation_message)
    VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16)
    ON CONFLICT (project_id, name) DO NOTHING RETURNING ${TOOL_COLUMNS}`;
  return {
    create: async (projectId, t) =>
      (await db.query<ToolRecord>('tools_create', INSERT, insert(projectId, t)))[0],
    seed: async (projectId, tools) => {
      let n = 0;
      for (const t of tools)
        n += (await db.query('tools_create', INSERT, insert(projectId, t))).length;
      return n;
    },
    syncReserved: async (tools) => {
      const catalog = JSON.stringify(
        tools.map((t) => ({
          name: t.name,
          target: t.target,
          description: t.description,
          category: t.category,
          parameters: t.parameters,
          annotations: t.annotations ?? {},
          options: t.options ?? {},
          origin: t.origin,
        })),
      );
      // The release's keys of `options` (e.g. idempotent) are merged over the project's.
      const updated = await db.query(
        'tools_sync_reserved',
        `UPDATE resource.tools t
            SET description = c.description, parameters = c.parameters,
                annotations = c.annotations, options = t.options || c.options, updated_at = now()
           FROM jsonb_to_recordset($1::jsonb)
                  AS c(name text, description text, parameters jsonb, annotations jsonb,
                       options jsonb)
          WHERE t.name = c.name AND t.origin IN ('skills', 'builtin')
            AND (t.description <> c.description OR t.parameters <> c.parameters
                 OR t.annotations <> c.annotations OR NOT t.options @> c.options)
         RETURNING t.tool_id`,
        [catalog],
      );
      // A reserved tool this release added reaches the projects seeded before it.
      const added = await db.query(
        'tools_sync_reserved_add',
        `INSERT INTO resource.tools
           (tool_id, project_id, name, target, description, category, parameters, annotations,
            options, origin)
         SELECT gen_random_uuid(), p.project_id, c.name, c.target, c.description, c.category,
                c.parameters, c.annotations, c.options, c.origin
           FROM resource.projects p
          CROSS JOIN jsonb_to_recordset($1::jsonb)
            AS c(name text, target text, description text, category text, parameters jsonb,
                 annotations jsonb, options jsonb, origin text)
          WHERE c.origin IN ('skills', 'builtin')
         ON CONFLICT (project_id, name) DO NOTHING
         RETURNING tool_id`,
        [catalog],
      );
      return updated.length + added.length;
    },
    get: async (projectId, name) =>
      (
        await db.query<ToolRecord>(
          'tools_get',
          `SELECT ${TOOL_COLUMNS} FROM resource.tools WHERE project_id = $1 AND name = $2`,
          [projectId, name],
        )
      )[0],
    list: (projectId, f) =>
      db.query<ToolRecord>(
        'tools_list',
        `SELECT ${TOOL_COLUMNS} FROM resource.tools
         WHERE ${FILTER} AND ($8::text IS NULL OR name > $8)
         ORDER BY name LIMIT $7`,
        [...filterParams(projectId, f), f.limit ?? null, f.after ?? null],
      ),
    facets: async (projectId, f) => {
      const row = (
        await db.query<{
          total: string;
          categories: Record<string, number> | null;
          tags: Record<string, number> | null;
        }>(
          'tools_facets',
          `WITH matched AS (SELECT category, tags FROM resource.tools WHERE ${FILTER})
           SELECT (SELECT count(*) FROM matched) AS total,
                  (SELECT jsonb_object_agg(category, n) FROM
                     (SELECT category, count(*) AS n FROM matched GROUP BY category) c) AS categories,
                  (SELECT jsonb_object_agg(tag, n) FROM
                     (SELECT tag, count(*) AS n FROM matched, unnest(tags) AS tag GROUP BY tag) t)
                    AS tags`,
          filterParams(projectId, f),
        )
      )[0];
      return {
        total: Number(row?.total ?? 0),
        categories: row?.categories ?? {},
        tags: row?.tags ?? {},
      };
    },
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
             spec = coalesce($9, spec),
             annotations = coalesce($10, annotations),
             output_schema = CASE WHEN $11::boolean THEN $12::jsonb ELSE output_schema END,
             version = CASE WHEN $13::boolean THEN $14::text ELSE version END,
             deprecated = coalesce($15, deprecated),
             deprecation_message = CASE WHEN $16::boolean THEN $17::text
                                        ELSE deprecation_message END,
             updated_at = now()
           WHERE project_id = $1 AND name = $2 RETURNING ${TOOL_COLUMNS}`,
          [
            projectId,
            name,
            p.description ?? null,
            p.category ?? null,
            p.tags ?? null,
            p.parameters ?? null,
            p.options ?? null,
            p.enabled ?? null,
            p.spec ?? null,
            p.annotations ?? null,
            p.output_schema !== undefined,
            p.output_schema ?? null,
            p.version !== undefined,
            p.version ?? null,
            p.deprecated ?? null,
            p.deprecation_message !== undefined,
            p.deprecation_message ?? null,
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
    approveDefinition: (projectId, name, expectHash) =>
      db.tx(async (tx) => {
        const row = (
          await tx.query<ToolRecord>(
            'tools_get_for_approval',
            `SELECT ${TOOL_COLUMNS} FROM resource.tools WHERE project_id = $1 AND name = $2 FOR UPDATE`,
            [projectId, name],
          )
        )[0];
        if (!row) return undefined;
        const p = row.pending_definition;
        if (!p) return 'none';
        if (expectHash !== undefined && p.hash !== expectHash) return 'stale';
        return (
          await tx.query<ToolRecord>(
            'tools_approve_definition',
            `UPDATE resource.tools SET description = $3, parameters = $4, annotations = $5,
               output_schema = $6, spec = $7, definition_hash = $8, pending_definition = NULL,
               updated_at = now()
             WHERE project_id = $1 AND name = $2 RETURNING ${TOOL_COLUMNS}`,
            [
              projectId,
              name,
              p.description,
              p.parameters,
              p.annotations,
              p.output_schema,
              p.spec,
              p.hash,
            ],
          )
        )[0];
      }),
    usage: async (projectId, name) => {
      const row = (
        await db.query<Record<keyof ToolUsage, string | number | Date | null>>(
          'tools_usage',
          `SELECT count(*) AS calls,
             count(*) FILTER (WHERE status = 'succeeded') AS succeeded,
             count(*) FILTER (WHERE status = 'failed') AS failed,
             count(*) FILTER (WHERE status = 'timeout') AS timeout,
             count(*) FILTER (WHERE status = 'canceled') AS canceled,
             count(*) FILTER (WHERE status IN ('queued', 'awaiting_approval', 'running')) AS active,
             avg(duration_ms) AS avg_duration_ms,
             max(started_at) AS last_called_at
           FROM state.tool_executions WHERE project_id = $1 AND tool_name = $2`,
          [projectId, name],
        )
      )[0];
      // count() is a bigint, which pg hands over as a string.
      const n = (v: unknown) => Number(v ?? 0);
      return {
        calls: n(row?.calls),
        succeeded: n(row?.succeeded),
        failed: n(row?.failed),
        timeout: n(row?.timeout),
        canceled: n(row?.canceled),
        active: n(row?.active),
        avg_duration_ms: row?.avg_duration_ms == null ? null : Number(row.avg_duration_ms),
        last_called_at: row?.last_called_at instanceof Date ? row.last_called_at : null,
      };
    },
  };
}
