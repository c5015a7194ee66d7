-- Sandbox sessions: one row per live sandbox that calls share through a session id. The lock
-- and expiry columns are for session reuse and the reaper.
CREATE TABLE state.sandboxes (
  sandbox_id      text PRIMARY KEY,
  provider        text NOT NULL CHECK (provider IN ('local', 'e2b')),
  project_id      text NOT NULL,
  agent_id        text,
  session_key     text NOT NULL,
  state           text NOT NULL DEFAULT 'active'
                  CHECK (state IN ('active', 'reaping', 'destroyed', 'error')),
  created_at      timestamptz NOT NULL DEFAULT now(),
  last_used_at    timestamptz NOT NULL DEFAULT now(),
  idle_expires_at timestamptz,
  hard_expires_at timestamptz,
  lock_owner      text,
  lock_expires_at timestamptz,
  reap_attempts   integer NOT NULL DEFAULT 0,
  last_error      text
);
-- At most one live sandbox per session.
CREATE UNIQUE INDEX sandboxes_session_once ON state.sandboxes (project_id, md5(session_key))
  WHERE state = 'active';
CREATE INDEX sandboxes_expiry ON state.sandboxes (idle_expires_at, hard_expires_at)
  WHERE state = 'active';
