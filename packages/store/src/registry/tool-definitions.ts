// The definition of an MCP tool as it is pinned: what a model reads (name, description, input
// schema) and what a client trusts (annotations). Hashed over a canonical JSON form (keys
// sorted), so the same definition listed again with its keys in another order is no change.
import { createHash } from 'node:crypto';

export interface ToolDefinition {
  /** The name the MCP server knows the tool by. */
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  /** The `$schema` the server declared for its input schema, when it declared one. */
  schemaDialect?: string | undefined;
  annotations: Record<string, boolean>;
}

/** A definition a refresh found that differs from the approved one; held until approved. */
export interface PendingDefinition {
  hash: string;
  description: string;
  parameters: Record<string, unknown>;
  annotations: Record<string, boolean>;
  output_schema: Record<string, unknown> | null;
  /** The row's `spec` to take on approval (the MCP name and schema dialect). */
  spec: Record<string, unknown>;
  detected_at: string;
}

function canonical(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(canonical);
  if (typeof v === 'object' && v !== null) {
    return Object.fromEntries(
      Object.keys(v)
        .sort()
        .map((k) => [k, canonical((v as Record<string, unknown>)[k])]),
    );
  }
  return v;
}

export function definitionHash(d: ToolDefinition): string {
  const body = {
    name: d.name,
    description: d.description,
    parameters: d.parameters,
    schema: d.schemaDialect ?? null,
    annotations: d.annotations,
  };
  return createHash('sha256')
    .update(JSON.stringify(canonical(body)))
    .digest('hex');
}
