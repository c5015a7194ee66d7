-- The tools service (services/tools): registry tools it runs itself, the project secrets their
-- auth reads, the shared rate-limit buckets, and the cost of each execution.

-- A tool's origin says who runs it: `skills` and `builtin` the skills service; `http` and `mcp`
-- the tools service, from `spec` (the HTTP request template; for MCP the server and remote tool);
-- `external` tools are served by a process of their own, so the tools service leaves them alone.
ALTER TABLE resource.tools DROP CONSTRAINT tools_origin_check;
ALTER TABLE resource.tools ADD CONSTRAINT tools_origin_check
  CHECK (origin IN ('skills', 'builtin', 'external', 'http', 'mcp'));
ALTER TABLE resource.tools ADD COLUMN spec jsonb NOT NULL DEFAULT '{}'::jsonb;

-- Write-only secrets: AES-256-GCM ciphertext with its own random iv and auth tag; the key is in
-- the configuration ([secrets] key), never in the database.
CREATE TABLE resource.secrets (
  project_id text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name       text NOT NULL CHECK (name ~ '^[A-Za-z0-9_-]{1,64}$'),
  ciphertext bytea NOT NULL,
  iv         bytea NOT NULL,
  tag        bytea NOT NULL,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name)
);

-- One token bucket per project and tool, shared by every tools-service instance: a take is one
-- UPDATE, which the row lock serializes.
CREATE TABLE state.rate_buckets (
  project_id  text NOT NULL,
  tool_name   text NOT NULL,
  tokens      double precision NOT NULL,
  refilled_at timestamptz NOT NULL,
  PRIMARY KEY (project_id, tool_name)
);

-- Takes one token: 0 when taken, otherwise the seconds until one will be there. The upsert
-- locks the row until the statement's transaction ends, so concurrent takes queue on it and
-- the bucket never goes below zero. One clock (the database's) for every instance.
CREATE FUNCTION state.take_rate_token(
  p_project text, p_tool text, p_per_sec double precision, p_burst double precision
) RETURNS double precision LANGUAGE plpgsql AS $$
DECLARE
  now_ts timestamptz := clock_timestamp();
  cur double precision;
BEGIN
  INSERT INTO state.rate_buckets AS b (project_id, tool_name, tokens, refilled_at)
  VALUES (p_project, p_tool, p_burst, now_ts)
  ON CONFLICT (project_id, tool_name) DO UPDATE
    SET tokens = least(p_burst,
                       b.tokens + greatest(0, extract(epoch FROM now_ts - b.refilled_at)) * p_per_sec),
        refilled_at = greatest(b.refilled_at, now_ts)
  RETURNING tokens INTO cur;
  IF cur >= 1 THEN
    UPDATE state.rate_buckets SET tokens = cur - 1
    WHERE project_id = p_project AND tool_name = p_tool;
    RETURN 0;
  END IF;
  RETURN (1 - cur) / p_per_sec;
END $$;

-- The cost estimate of a call (tool options `cost`), summed per tool and project by the metrics.
ALTER TABLE state.tool_executions
  ADD COLUMN cost          double precision,
  ADD COLUMN cost_currency text;
