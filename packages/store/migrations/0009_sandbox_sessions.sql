-- Sandbox sessions with locks and TTLs, and the sandbox-reaper's queue.
--
-- lock_owner / lock_expires_at are held by the tool call using a session (its tool_call_id) and,
-- once a row is `reaping`, by the reaper destroying it (`reaper:<instance>`): a crashed holder's
-- lock lapses and anyone may take it over. A failed destroy keeps the row `reaping`, counts
-- reap_attempts, keeps last_error and waits until next_attempt_at (exponential backoff).
ALTER TABLE state.sandboxes
  ADD COLUMN next_attempt_at timestamptz,
  ADD COLUMN destroyed_at    timestamptz;

-- The reaper's scan: live or half-reaped rows by the earlier of their two expiries. LEAST skips
-- nulls, so a row with only a hard expiry is found by it.
CREATE INDEX sandboxes_due ON state.sandboxes ((LEAST(idle_expires_at, hard_expires_at)))
  WHERE state IN ('active', 'reaping');

-- "Does this sandbox still run a task or a job?": the reaper leaves such a sandbox alone while
-- it is only idle.
CREATE INDEX skill_tasks_running_sandbox ON state.skill_tasks (sandbox_id) WHERE status = 'running';
CREATE INDEX skill_jobs_running_sandbox ON state.skill_jobs (sandbox_id) WHERE status = 'running';
