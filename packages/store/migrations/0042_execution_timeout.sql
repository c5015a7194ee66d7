-- The deadline a call asked for (its message's timeout_ms), on its execution row, so that a
-- re-run (POST .../executions/:id/rerun) asks for the same one. NULL when the call gave none (the
-- tool's default applied) or when no row was written before its result (a fast call off the bus).
ALTER TABLE state.tool_executions ADD COLUMN timeout_ms integer CHECK (timeout_ms > 0);
