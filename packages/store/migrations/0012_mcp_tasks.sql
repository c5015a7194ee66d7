-- MCP Tasks of the facade (2025-11-25 experimental form): a task is a view of one tool call, its
-- id the call's tool_call_id, so its state is the execution row and its result the card. This
-- table only records that a call was made as a task (what tasks/list shows) with the ttl and
-- poll interval it was created with; the view expires at created_at + ttl, the card stays.
CREATE TABLE state.mcp_tasks (
  project_id       text NOT NULL,
  task_id          text NOT NULL,
  ttl_ms           bigint CHECK (ttl_ms IS NULL OR ttl_ms > 0),
  poll_interval_ms integer NOT NULL CHECK (poll_interval_ms > 0),
  created_at       timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, task_id)
);
CREATE INDEX mcp_tasks_project_created ON state.mcp_tasks (project_id, created_at DESC, task_id);
