-- Lookups of one call by its tool_call_id, and of one agent's due turns. The call tables are
-- unique on (project_id, md5(tool_call_id)) (a b-tree row has a size limit a long id could
-- exceed), so a query naming tool_call_id itself could only use the project_id prefix of that
-- index and walked every call the project ever made: applying one tool result to an agent's
-- inbox read each of the project's turn_calls rows. A hash index answers an equality on the id
-- at the same cost however long the id and however many calls the project has (cards and
-- tool_executions have one since 0001).
CREATE INDEX turn_calls_tool_call_id ON state.turn_calls USING hash (tool_call_id);
CREATE INDEX approvals_tool_call_id ON state.approvals USING hash (tool_call_id);
CREATE INDEX execution_edges_tool_call_id ON state.execution_edges USING hash (tool_call_id);

-- The due turns of one agent (a wakeup's claim, the inbox's resumed turns), without walking
-- every due turn of every project.
CREATE INDEX turns_runnable_agent ON state.turns (project_id, agent_id, updated_at)
  WHERE status IN ('ready', 'running');
