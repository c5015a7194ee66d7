// One discovery of an MCP server's tools written to the registry, in one transaction: new tools
// are inserted as `<server>.<tool>` with origin `mcp`, changed ones updated, vanished ones
// disabled (never deleted: agents and history keep their names) and re-enabled if they come
// back; names already held by another tool are refused. With pinning on, a tool whose
// definition (name, description, input schema, annotations) no longer matches the approved one
// keeps its approved definition; the new one is held in `pending_definition` until someone
// approves it (see tools.approveDefinition).
import { v7 as uuidv7 } from 'uuid';
import type { Db } from '../core/db.ts';
import { definitionHash, type PendingDefinition } from './tool-definitions.ts';
import type { DiscoveredTool, McpSyncOutcome, McpToolSpec } from './mcp-tool-records.ts';

export async function syncMcpTools(
  tx: Db,
  projectId: string,
  name: string,
  tools: DiscoveredTool[],
  opts: { pin?: boolean } = {},
): Promise<McpSyncOutcome | 'disabled' | undefined> {
  // The row lock orders two refreshes of one server: the second sees the first's rows.
  const server = await tx.query<{ enabled: boolean }>(
    'mcp_servers_lock',
    `SELECT server_id, enabled FROM resource.mcp_servers
     WHERE project_id = $1 AND name = $2 FOR UPDATE`,
    [projectId, name],
  );
  if (server.length === 0) return undefined;
  // Switched off while the listing ran: its tools stay as the switch left them.
  if (!server[0]!.enabled) return 'disabled';
  const existing = await tx.query<{
    name: string;
    description: string;
    parameters: Record<string, unknown>;
    spec: McpToolSpec;
    enabled: boolean;
    definition_hash: string | null;
    pending_definition: PendingDefinition | null;
  }>(
    'mcp_servers_tools',
    `SELECT name, description, parameters, spec, enabled, definition_hash,
            pending_definition FROM resource.tools
     WHERE project_id = $1 AND origin = 'mcp' AND spec->>'server' = $2`,
    [projectId, name],
  );
  const mine = new Map(existing.map((t) => [t.name, t]));
  const out: McpSyncOutcome = {
    added: [],
    updated: [],
    disabled: [],
    refused: [],
    held: [],
    toolCount: 0,
  };
  const seen = new Set<string>();
  for (const t of tools) {
    const full = `${name}.${t.token}`;
    seen.add(full);
    const spec: McpToolSpec = {
      server: name,
      tool: t.mcpName,
      ...(t.schemaDialect ? { schema: t.schemaDialect } : {}),
    };
    const old = mine.get(full);
    const hash = definitionHash({
      name: t.mcpName,
      description: t.description,
      parameters: t.parameters,
      schemaDialect: t.schemaDialect,
      annotations: t.annotations ?? {},
    });
    if (old && opts.pin && old.definition_hash !== null && old.definition_hash !== hash) {
      // Held: the approved definition stays in force; the new one waits for approval. A
      // tool that had vanished and comes back changed is switched on again, still held.
      if (old.pending_definition?.hash !== hash || old.spec.vanished) {
        const pending: PendingDefinition = {
          hash,
          description: t.description,
          parameters: t.parameters,
          annotations: t.annotations ?? {},
          output_schema: t.outputSchema ?? null,
          spec: { ...spec },
          detected_at: new Date().toISOString(),
        };
        await tx.query(
          'mcp_tools_hold',
          `UPDATE resource.tools SET pending_definition = $3,
             enabled = CASE WHEN (spec->>'vanished')::boolean THEN true ELSE enabled END,
             spec = spec - 'vanished', updated_at = now()
           WHERE project_id = $1 AND name = $2`,
          [projectId, full, pending],
        );
        out.held.push(full);
      }
      continue;
    }
    // The definition's columns as an insert and an update both write them, in that order.
    const definition = [
      t.description,
      t.parameters,
      spec,
      t.annotations ?? {},
      t.outputSchema ?? null,
      hash,
    ];
    if (!old) {
      const inserted = await tx.query(
        'mcp_tools_insert',
        `INSERT INTO resource.tools
           (tool_id, project_id, name, target, description, category, tags, parameters,
            origin, options, spec, annotations, output_schema, definition_hash)
         VALUES ($1, $2, $3, $4, $5, 'mcp', '{}', $6, 'mcp', '{}', $7, $8, $9, $10)
         ON CONFLICT (project_id, name) DO NOTHING RETURNING tool_id`,
        [uuidv7(), projectId, full, name, ...definition],
      );
      if (inserted.length === 1) out.added.push(full);
      else out.refused.push(full);
      continue;
    }
    // jsonb equality is by value, so key order in a re-listed schema is no change.
    const changed = await tx.query(
      'mcp_tools_update',
      `UPDATE resource.tools SET
         description = $3, parameters = $4, spec = $5, annotations = $6,
         output_schema = $7,
         enabled = CASE WHEN (spec->>'vanished')::boolean THEN true ELSE enabled END,
         definition_hash = $8, pending_definition = NULL,
         updated_at = now()
       WHERE project_id = $1 AND name = $2
         AND (description IS DISTINCT FROM $3 OR parameters IS DISTINCT FROM $4::jsonb
              OR spec IS DISTINCT FROM $5::jsonb OR annotations IS DISTINCT FROM $6::jsonb
              OR output_schema IS DISTINCT FROM $7::jsonb
              OR definition_hash IS DISTINCT FROM $8 OR pending_definition IS NOT NULL)
       RETURNING tool_id`,
      [projectId, full, ...definition],
    );
    if (changed.length === 1) out.updated.push(full);
  }
  for (const old of existing) {
    // Already disabled (by hand, or vanished before): left as it is, and not marked, so a
    // tool a user switched off is not switched on when the server lists it again.
    if (seen.has(old.name) || !old.enabled) continue;
    await tx.query(
      'mcp_tools_vanish',
      `UPDATE resource.tools SET enabled = false,
         spec = spec || '{"vanished": true}'::jsonb, updated_at = now()
       WHERE project_id = $1 AND name = $2`,
      [projectId, old.name],
    );
    out.disabled.push(old.name);
  }
  out.toolCount = tools.length - out.refused.length;
  await tx.query(
    'mcp_servers_synced',
    `UPDATE resource.mcp_servers SET state = 'connected', last_error = NULL,
       tool_count = $3, refreshed_at = now(), updated_at = now()
     WHERE project_id = $1 AND name = $2`,
    [projectId, name, out.toolCount],
  );
  return out;
}
