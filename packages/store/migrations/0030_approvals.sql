-- Human approvals of tool calls. A call whose tool, agent tool config or target requires
-- approval is parked here before it runs: the tool service writes the row, acks the message and
-- holds nothing (no lease, no worker) while it waits. The call message itself (subject, the
-- headers that matter, body) is kept so that, once decided, it can be published again and run
-- (approved) or answered with a failed card (denied, timed out) under its own tool_call_id. A
-- decision is one conditional UPDATE of a pending row: the first one wins.
CREATE TABLE state.approvals (
  approval_id     uuid PRIMARY KEY,
  project_id      text NOT NULL,
  tool_call_id    text NOT NULL,
  channel         text NOT NULL,
  tool_name       text NOT NULL,
  target          text NOT NULL,
  agent_id        text,
  -- As the execution log keeps them (capped); what a person deciding is shown.
  arguments       jsonb,
  -- What required the approval: {source: tool|agent|target, mode: required|destructive}.
  required_by     jsonb NOT NULL,
  subject         text NOT NULL,
  headers         jsonb NOT NULL,
  body            bytea NOT NULL,
  status          text NOT NULL CHECK (status IN ('pending', 'approved', 'denied', 'timed_out')),
  requested_at    timestamptz NOT NULL DEFAULT now(),
  expires_at      timestamptz NOT NULL,
  decided_at      timestamptz,
  decided_by      text,
  decision_reason text,
  -- When the decided call was published again; NULL: a scan publishes it.
  dispatched_at   timestamptz
);
CREATE UNIQUE INDEX approvals_once ON state.approvals (project_id, md5(tool_call_id));
CREATE INDEX approvals_project ON state.approvals (project_id, requested_at DESC);
CREATE INDEX approvals_expiring ON state.approvals (expires_at) WHERE status = 'pending';
CREATE INDEX approvals_undispatched ON state.approvals (decided_at)
  WHERE status <> 'pending' AND dispatched_at IS NULL;

-- A whole target (e.g. `builtin`, an MCP server's name) requiring approval for its calls.
CREATE TABLE resource.target_approvals (
  project_id          text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  target              text NOT NULL,
  approval            text NOT NULL CHECK (approval IN ('required', 'destructive')),
  approval_timeout_ms integer CHECK (approval_timeout_ms > 0),
  updated_at          timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, target)
);

-- A parked call shows as awaiting_approval in the execution log.
ALTER TABLE state.tool_executions DROP CONSTRAINT tool_executions_status_check;
ALTER TABLE state.tool_executions ADD CONSTRAINT tool_executions_status_check
  CHECK (status IN ('queued', 'awaiting_approval', 'running', 'succeeded', 'failed', 'timeout',
                    'canceled'));
DROP INDEX state.tool_executions_active;
CREATE INDEX tool_executions_active ON state.tool_executions (project_id)
  WHERE status IN ('queued', 'awaiting_approval', 'running');
