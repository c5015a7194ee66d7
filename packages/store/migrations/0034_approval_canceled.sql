-- A call canceled while it waits for a person: its approval ends `canceled` (by the durable
-- cancel consumer of the tool services) and its call is filed canceled at once, instead of
-- waiting for a decision that no longer matters.
ALTER TABLE state.approvals DROP CONSTRAINT approvals_status_check;
ALTER TABLE state.approvals ADD CONSTRAINT approvals_status_check
  CHECK (status IN ('pending', 'approved', 'denied', 'timed_out', 'canceled'));
