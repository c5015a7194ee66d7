-- What an MCP server asks during a call (elicitation/create) when no MCP client can answer it: a
-- call made over the bus, the SDK, the HTTP API or an agent, a task, or a facade client without
-- elicitation. The tools service running the call keeps the server's request open and files it
-- here; any api instance answers it (accept with content, decline, cancel) by one conditional
-- UPDATE of the pending row, so the first answer stands. The tools service reads the answer and
-- sends it to the server. Past expires_at (a little before the call's deadline) a pending row is
-- expired, and the call fails input_expired.
CREATE TABLE state.input_requests (
  input_request_id uuid PRIMARY KEY,
  project_id       text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  tool_call_id     text NOT NULL,
  channel          text NOT NULL,
  tool_name        text NOT NULL,
  -- The project's MCP server that asks.
  server           text NOT NULL,
  message          text NOT NULL,
  -- The form the server asks for (a flat JSON Schema object, as the server sent it).
  requested_schema jsonb NOT NULL,
  -- pending; answered (see action); expired (its deadline passed); closed (the call ended
  -- first: canceled, or its tool service stopped).
  status           text NOT NULL CHECK (status IN ('pending', 'answered', 'expired', 'closed')),
  action           text CHECK (action IN ('accept', 'decline', 'cancel')),
  content          jsonb,
  requested_at     timestamptz NOT NULL DEFAULT now(),
  expires_at       timestamptz NOT NULL,
  answered_at      timestamptz,
  answered_by      text,
  CHECK ((status = 'answered') = (action IS NOT NULL))
);
CREATE INDEX input_requests_project ON state.input_requests (project_id, requested_at DESC);
CREATE INDEX input_requests_pending ON state.input_requests (project_id, expires_at)
  WHERE status = 'pending';
