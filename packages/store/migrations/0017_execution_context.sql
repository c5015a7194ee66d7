-- The execution log keeps what a call was asked to do and where it came from: its arguments as
-- the caller sent them (capped by tools.execution_arguments_max_bytes; a larger set is replaced
-- by a marker with its size), and the agent turn and task it belongs to. History filters by
-- agent, task and turn; retention deletes finished rows by age (see retention.ts).
ALTER TABLE state.tool_executions
  ADD COLUMN arguments jsonb,
  ADD COLUMN turn_id text,
  ADD COLUMN task_id uuid;
CREATE INDEX tool_executions_task ON state.tool_executions (project_id, task_id)
  WHERE task_id IS NOT NULL;
CREATE INDEX tool_executions_turn ON state.tool_executions USING hash (turn_id)
  WHERE turn_id IS NOT NULL;
CREATE INDEX tool_executions_agent ON state.tool_executions (project_id, agent_id, started_at)
  WHERE agent_id IS NOT NULL;
CREATE INDEX tool_executions_finished ON state.tool_executions (finished_at)
  WHERE finished_at IS NOT NULL;
