// The registry rows of an OpenAPI import. An import is keyed by its prefix (the tools' target):
// its tools carry `import_source = 'openapi:<prefix>'`. Applying an import is one transaction,
// like an MCP discovery: new operations are inserted as http tools, changed ones updated (and
// switched on again if a previous import had disabled them), those the document no longer has
// disabled, never deleted (agents and history keep their names). A name already held by a tool
// that is not this import's is refused, and nothing is written.
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';

/** One operation as the importer mapped it: an http tool's definition. */
export interface ImportedTool {
  name: string;
  description: string;
  category: string;
  tags: string[];
  parameters: Record<string, unknown>;
  spec: Record<string, unknown>;
  annotations: Record<string, boolean>;
  options: Record<string, unknown>;
  /** The document's info.version. */
  version: string | null;
  /** The operation is marked `deprecated: true`. */
  deprecated: boolean;
}

/** What applying an import did, by full tool name. */
export interface ImportOutcome {
  added: string[];
  changed: string[];
  /** No longer in the document: disabled. */
  removed: string[];
  unchanged: string[];
  /** Taken by a tool that is not this import's; when not empty, nothing was written. */
  conflicts: string[];
}

export interface OpenApiImportsRepo {
  apply(projectId: string, prefix: string, tools: ImportedTool[]): Promise<ImportOutcome>;
}

export const importSource = (prefix: string): string => `openapi:${prefix}`;

export function createOpenApiImportsRepo(db: Db): OpenApiImportsRepo {
  return {
    apply: (projectId, prefix, tools) =>
      db.tx(async (tx) => {
        const source = importSource(prefix);
        // Two imports under one prefix at once would race on the same names: the advisory lock
        // orders them, so the second sees the first's rows.
        await tx.query('openapi_import_lock', 'SELECT pg_advisory_xact_lock(hashtext($1))', [
          `${projectId}/${source}`,
        ]);
        const rows = await tx.query<{
          name: string;
          import_source: string | null;
          enabled: boolean;
        }>(
          'openapi_import_rows',
          `SELECT name, import_source, enabled FROM resource.tools
           WHERE project_id = $1 AND (import_source = $2 OR name = ANY ($3::text[]))`,
          [projectId, source, tools.map((t) => t.name)],
        );
        const byName = new Map(rows.map((r) => [r.name, r]));
        const out: ImportOutcome = {
          added: [],
          changed: [],
          removed: [],
          unchanged: [],
          conflicts: [],
        };
        for (const t of tools) {
          const row = byName.get(t.name);
          if (row && row.import_source !== source) out.conflicts.push(t.name);
        }
        if (out.conflicts.length > 0) return out;
        const seen = new Set<string>();
        for (const t of tools) {
          seen.add(t.name);
          const row = byName.get(t.name);
          if (!row) {
            await tx.query(
              'openapi_import_insert',
              `INSERT INTO resource.tools
                 (tool_id, project_id, name, target, description, category, tags, parameters,
                  origin, options, spec, annotations, import_source, version, deprecated)
               VALUES ($1, $2, $3, $4, $5, $6, $7, $8, 'http', $9, $10, $11, $12, $13, $14)`,
              [
                uuidv7(),
                projectId,
                t.name,
                prefix,
                t.description,
                t.category,
                t.tags,
                t.parameters,
                t.options,
                t.spec,
                t.annotations,
                source,
                t.version,
                t.deprecated,
              ],
            );
            out.added.push(t.name);
            continue;
          }
          // jsonb equality is by value, so a re-serialised document with the same content is
          // no change. A tool the document had dropped comes back enabled.
          const changed = await tx.query(
            'openapi_import_update',
            `UPDATE resource.tools SET
               description = $3, category = $4, tags = $5, parameters = $6, options = $7,
               spec = $8, annotations = $9, version = $10, deprecated = $11, enabled = true,
               updated_at = now()
             WHERE project_id = $1 AND name = $2
               AND (description IS DISTINCT FROM $3 OR category IS DISTINCT FROM $4
                    OR tags IS DISTINCT FROM $5::text[] OR parameters IS DISTINCT FROM $6::jsonb
                    OR options IS DISTINCT FROM $7::jsonb OR spec IS DISTINCT FROM $8::jsonb
                    OR annotations IS DISTINCT FROM $9::jsonb
                    OR version IS DISTINCT FROM $10::text OR deprecated IS DISTINCT FROM $11::boolean
                    OR NOT enabled)
             RETURNING tool_id`,
            [
              projectId,
              t.name,
              t.description,
              t.category,
              t.tags,
              t.parameters,
              t.options,
              t.spec,
              t.annotations,
              t.version,
              t.deprecated,
            ],
          );
          (changed.length === 1 ? out.changed : out.unchanged).push(t.name);
        }
        for (const row of rows) {
          if (row.import_source !== source || seen.has(row.name) || !row.enabled) continue;
          await tx.query(
            'openapi_import_disable',
            `UPDATE resource.tools SET enabled = false, updated_at = now()
             WHERE project_id = $1 AND name = $2`,
            [projectId, row.name],
          );
          out.removed.push(row.name);
        }
        return out;
      }),
  };
}
