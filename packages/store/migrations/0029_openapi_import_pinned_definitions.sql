-- Tools brought in by an OpenAPI import carry the import they came from ('openapi:<prefix>'),
-- so a re-import of the same document finds its own tools: it updates them, and disables (never
-- deletes) those the document no longer has. NULL for every other tool.
ALTER TABLE resource.tools ADD COLUMN import_source text;
CREATE INDEX tools_import_source ON resource.tools (project_id, import_source)
  WHERE import_source IS NOT NULL;

-- Pinned MCP tool definitions: `definition_hash` is the sha256 of the definition last approved
-- (name, description, input schema, annotations), set when an MCP tool is first registered. A
-- refresh that lists a different definition leaves the tool as approved and puts the new one
-- in `pending_definition` ({hash, description, parameters, annotations, output_schema, spec,
-- detected_at}); calls fail definition_changed until someone approves it.
ALTER TABLE resource.tools
  ADD COLUMN definition_hash text,
  ADD COLUMN pending_definition jsonb
    CHECK (pending_definition IS NULL OR jsonb_typeof(pending_definition) = 'object');
