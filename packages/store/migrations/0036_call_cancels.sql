-- Stored cancels of tool calls, as the durable cancel consumer of the tool services records them
-- (beside the tombstone under the call's lease key). A call of a pure tool takes no lease: the
-- statement that files its result card looks here instead, and files the call `canceled` when a
-- cancel was stored before the result (the guarantee the tombstone gives every other call).
CREATE TABLE state.call_cancels (
  project_id   text NOT NULL,
  tool_call_id text NOT NULL,
  reason       text NOT NULL,
  created_at   timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX call_cancels_once ON state.call_cancels (project_id, md5(tool_call_id));
CREATE INDEX call_cancels_created ON state.call_cancels (created_at);
