-- Skill jobs (skills.start_job): ordered steps run one after another in one sandbox. The head is
-- read by job_status, job_watch and job_cancel from any instance; only `owner_instance` runs the
-- steps and writes them. Steps live in one jsonb array (at most 20, always written whole by the
-- one owner), each {command, timeout_ms, status, exit_code, signal, tails, pid, times}; step env
-- values are never stored (they may hold secrets).
CREATE TABLE state.skill_jobs (
  job_id            uuid PRIMARY KEY,
  project_id        text NOT NULL,
  agent_id          text,
  tool_call_id      text NOT NULL,
  sandbox_id        text NOT NULL,
  -- The session the sandbox belongs to; null for a sandbox made for this job alone.
  session_key       text,
  status            text NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'succeeded', 'failed', 'timeout', 'canceled', 'orphaned')),
  owner_instance    text NOT NULL,
  steps             jsonb NOT NULL,
  started_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz,
  error             jsonb,
  updated_at        timestamptz NOT NULL DEFAULT now()
);
-- One running job per session: a second start_job in a busy session loses this race in the
-- database, not in any one instance's memory.
CREATE UNIQUE INDEX skill_jobs_one_running_per_session
  ON state.skill_jobs (project_id, session_key)
  WHERE status = 'running' AND session_key IS NOT NULL;
-- The reaper's scan: running jobs of one instance.
CREATE INDEX skill_jobs_running ON state.skill_jobs (owner_instance) WHERE status = 'running';
