-- Task cancel: a turn can end `canceled` (its task too; state.tasks allowed it already), and the
-- calls it still waited on are marked `canceled` so the scan neither times them out nor
-- publishes them again.
ALTER TABLE state.turns DROP CONSTRAINT turns_status_check;
ALTER TABLE state.turns ADD CONSTRAINT turns_status_check
  CHECK (status IN ('ready', 'running', 'waiting', 'succeeded', 'failed', 'canceled'));
ALTER TABLE state.turn_calls DROP CONSTRAINT turn_calls_status_check;
ALTER TABLE state.turn_calls ADD CONSTRAINT turn_calls_status_check
  CHECK (status IN ('pending', 'done', 'timeout', 'canceled'));
