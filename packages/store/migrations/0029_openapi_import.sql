-- Tools brought in by an OpenAPI import carry the import they came from ('openapi:<prefix>'),
-- so a re-import of the same document finds its own tools: it updates them, and disables (never
-- deletes) those the document no longer has. NULL for every other tool.
ALTER TABLE resource.tools ADD COLUMN import_source text;
CREATE INDEX tools_import_source ON resource.tools (project_id, import_source)
  WHERE import_source IS NOT NULL;
