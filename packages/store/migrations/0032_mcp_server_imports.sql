-- MCP servers brought in from an MCP Registry `server.json` (POST .../mcp-servers/import).
-- `import_source` is the entry they came from ({name, version, catalog?}): re-importing the same
-- `name` finds and updates its own server. `package` names the npm package a stdio server runs
-- ({registry_type, identifier, version}); the tools service installs it once per version into a
-- build environment (state.skill_envs, the durable job skill dependencies use) and mounts it
-- read-only into the server's sandbox. `secret_env` maps an environment variable of a stdio
-- server to a project secret; `secret_headers` maps a header of an http server to a secret
-- ({secret} for the whole value, or {template, secrets} for `Bearer {token}`-like values).
-- Values are read by the tools service at connect time and never stored here. `revision` grows
-- with each update of an imported server, so pooled connections to the old endpoint are
-- replaced.
ALTER TABLE resource.mcp_servers
  ADD COLUMN import_source jsonb
    CHECK (import_source IS NULL OR jsonb_typeof(import_source->'name') = 'string'),
  ADD COLUMN package jsonb CHECK (package IS NULL OR jsonb_typeof(package) = 'object'),
  ADD COLUMN secret_env jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN secret_headers jsonb NOT NULL DEFAULT '{}'::jsonb,
  ADD COLUMN revision integer NOT NULL DEFAULT 1;
CREATE UNIQUE INDEX mcp_servers_import_name ON resource.mcp_servers
  (project_id, (import_source->>'name')) WHERE import_source IS NOT NULL;
