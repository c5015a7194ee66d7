-- Idempotency of POST /v1/projects/:p/executions (docs/protocol.md, section 11.1). A request may
-- name its tool_call_id or carry an Idempotency-Key header; sent again it is answered from the
-- same execution and card instead of running the tool again.
--
-- The request's fingerprint (a hash of what the call does and who asked) sits on the execution
-- row the api queues, so a re-sent tool_call_id with other arguments is refused. NULL on rows
-- not queued over HTTP (agents, the SDK, the MCP facade): no HTTP request may claim those.
ALTER TABLE state.tool_executions ADD COLUMN request_fingerprint text;

-- One row per Idempotency-Key of a project: the request it was first sent with (fingerprint),
-- the call it names, and until when a request holding it is in progress (a second request
-- meanwhile is a 409; the lock lapses by itself if that api instance dies). Rows older than
-- [retention] idempotency_keys_max_age_hours are forgotten and deleted by the sandbox-reaper;
-- a row also goes with its execution.
CREATE TABLE state.idempotency_keys (
  project_id   text NOT NULL,
  idem_key     text NOT NULL,
  fingerprint  text NOT NULL,
  tool_call_id text NOT NULL,
  locked_until timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, idem_key)
);
CREATE INDEX idempotency_keys_created ON state.idempotency_keys (created_at);
CREATE INDEX idempotency_keys_call ON state.idempotency_keys (project_id, tool_call_id);
