-- Foundation schema: cards, the tool execution log, the agent inbox and execution edges.
-- Long ids (tool call ids, correlation ids) are looked up through hash indexes and made unique
-- through md5(...): b-tree index rows have a size limit that a long id could exceed.

CREATE SCHEMA IF NOT EXISTS state;

CREATE TABLE cards (
  card_id      uuid PRIMARY KEY,
  project_id   text NOT NULL,
  kind         text NOT NULL CHECK (kind IN ('tool.call', 'tool.result', 'final', 'message')),
  tool_call_id text,
  author       text NOT NULL,
  content      jsonb NOT NULL,
  metadata     jsonb NOT NULL DEFAULT '{}'::jsonb,
  created_at   timestamptz NOT NULL DEFAULT now()
);
-- One result card per tool call, whatever happens to the messages that carry it.
CREATE UNIQUE INDEX cards_tool_result_once ON cards (project_id, md5(tool_call_id))
  WHERE kind = 'tool.result';
CREATE INDEX cards_tool_call_id ON cards USING hash (tool_call_id);
CREATE INDEX cards_project_created ON cards (project_id, created_at);

CREATE TABLE state.tool_executions (
  project_id   text NOT NULL,
  tool_call_id text NOT NULL,
  channel      text NOT NULL,
  tool_name    text NOT NULL,
  target       text NOT NULL,
  agent_id     text,
  status       text NOT NULL CHECK (status IN ('running', 'succeeded', 'failed', 'timeout', 'canceled')),
  error_code   text,
  instance_id  text NOT NULL,
  attempts     integer NOT NULL DEFAULT 1,
  card_id      uuid,
  created_at   timestamptz NOT NULL DEFAULT now(),
  started_at   timestamptz NOT NULL DEFAULT now(),
  finished_at  timestamptz,
  duration_ms  double precision
);
CREATE UNIQUE INDEX tool_executions_once ON state.tool_executions (project_id, md5(tool_call_id));
CREATE INDEX tool_executions_tool_call_id ON state.tool_executions USING hash (tool_call_id);
CREATE INDEX tool_executions_project_started ON state.tool_executions (project_id, started_at);
CREATE INDEX tool_executions_running ON state.tool_executions (project_id) WHERE status = 'running';

-- Links an agent turn to the tool calls it made, so results find their way back.
CREATE TABLE state.execution_edges (
  project_id   text NOT NULL,
  agent_id     text NOT NULL,
  turn_id      text NOT NULL,
  turn_epoch   integer NOT NULL DEFAULT 0,
  tool_call_id text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX execution_edges_once ON state.execution_edges (project_id, md5(tool_call_id));
CREATE INDEX execution_edges_turn ON state.execution_edges USING hash (turn_id);

-- What waits for an agent: tool results and new tasks. One row per (type, correlation id).
CREATE TABLE state.agent_inbox (
  inbox_id       uuid PRIMARY KEY,
  project_id     text NOT NULL,
  agent_id       text NOT NULL,
  message_type   text NOT NULL CHECK (message_type IN ('tool_result', 'task')),
  correlation_id text NOT NULL,
  payload        jsonb NOT NULL DEFAULT '{}'::jsonb,
  status         text NOT NULL DEFAULT 'pending' CHECK (status IN ('pending', 'claimed', 'done')),
  claimed_by     text,
  claimed_at     timestamptz,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX agent_inbox_once ON state.agent_inbox (project_id, message_type, md5(correlation_id));
CREATE INDEX agent_inbox_pending ON state.agent_inbox (project_id, agent_id, created_at)
  WHERE status = 'pending';
