-- tool_executions_project_started (project_id, started_at) answers nothing that
-- tool_executions_history (project_id, started_at DESC, tool_call_id DESC, migration 0019) does
-- not: a b-tree is read in either direction, and the trailing column costs a range on started_at
-- nothing (checked with EXPLAIN ANALYZE on the console's per-minute and per-tool reads over
-- 200,000 rows: the same bitmap scan on the remaining index). Every call's execution row paid
-- for both: one index entry less per call to write, keep and vacuum.
DROP INDEX state.tool_executions_project_started;
