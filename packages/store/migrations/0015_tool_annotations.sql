-- MCP tool annotations and output schemas in the registry. `annotations` holds the hints
-- readOnlyHint, destructiveHint, idempotentHint and openWorldHint (booleans; a missing one is
-- unknown); `output_schema` is the JSON Schema of a tool's structured result, when one is known.
-- Both come from the registering request, the reserved catalog, or an MCP server's tools/list.
ALTER TABLE resource.tools
  ADD COLUMN annotations jsonb NOT NULL DEFAULT '{}'::jsonb
    CHECK (jsonb_typeof(annotations) = 'object'),
  ADD COLUMN output_schema jsonb
    CHECK (output_schema IS NULL OR jsonb_typeof(output_schema) = 'object');
