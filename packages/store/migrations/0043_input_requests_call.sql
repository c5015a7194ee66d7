-- The pending input requests of one call: a 2026-07-28 task whose MCP server asks for input
-- shows them on every tasks/get of the task (docs/mcp.md), so they are read by the call's id.
CREATE INDEX input_requests_call ON state.input_requests (project_id, tool_call_id)
  WHERE status = 'pending';
