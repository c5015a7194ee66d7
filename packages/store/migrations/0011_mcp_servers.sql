-- A project's MCP servers. Each server's tools are rows of resource.tools with origin `mcp`,
-- named `<server>.<tool>`, whose `spec` names the server and the tool's MCP name; refreshing a
-- server adds, updates and disables those rows (0010 adds the origin and the spec column).
-- http servers: url, plain headers and an auth naming a project secret (never a value here);
-- stdio servers: the command, its arguments and environment, run inside a sandbox session.
CREATE TABLE resource.mcp_servers (
  server_id    uuid PRIMARY KEY,
  project_id   text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name         text NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,64}$'),
  transport    text NOT NULL CHECK (transport IN ('http', 'stdio')),
  url          text,
  headers      jsonb NOT NULL DEFAULT '{}'::jsonb,
  auth         jsonb,
  command      text,
  args         text[] NOT NULL DEFAULT '{}',
  env          jsonb NOT NULL DEFAULT '{}'::jsonb,
  -- pending until the first discovery; then connected or error (with last_error).
  state        text NOT NULL DEFAULT 'pending' CHECK (state IN ('pending', 'connected', 'error')),
  last_error   text,
  tool_count   integer NOT NULL DEFAULT 0,
  refreshed_at timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  UNIQUE (project_id, name),
  CHECK ((transport = 'http') = (url IS NOT NULL)),
  CHECK ((transport = 'stdio') = (command IS NOT NULL))
);
