-- Async skill tasks (skills.run_cmd_async): the durable head of a command left running in a
-- sandbox. Status, watch and cancel read it from any instance; only `owner_instance` holds the
-- process, and it writes the final state. pid, proc_start_time and command prove to the reaper
-- that a process found later is still this task's (pids are reused).
CREATE TABLE state.skill_tasks (
  task_id           uuid PRIMARY KEY,
  project_id        text NOT NULL,
  agent_id          text,
  tool_call_id      text NOT NULL,
  sandbox_id        text NOT NULL,
  -- The session the sandbox belongs to; null for a sandbox made for this task alone.
  session_key       text,
  command           text NOT NULL,
  status            text NOT NULL DEFAULT 'running'
                    CHECK (status IN ('running', 'succeeded', 'failed', 'timeout', 'canceled', 'orphaned')),
  owner_instance    text NOT NULL,
  pid               integer,
  proc_start_time   text,
  started_at        timestamptz NOT NULL DEFAULT now(),
  finished_at       timestamptz,
  exit_code         integer,
  signal            text,
  stdout_tail       text,
  stderr_tail       text,
  stdout_truncated  boolean NOT NULL DEFAULT false,
  stderr_truncated  boolean NOT NULL DEFAULT false,
  artifacts         jsonb NOT NULL DEFAULT '[]',
  output_errors     jsonb NOT NULL DEFAULT '[]',
  error             jsonb,
  updated_at        timestamptz NOT NULL DEFAULT now()
);
-- The reaper's scan: running tasks of one instance.
CREATE INDEX skill_tasks_running ON state.skill_tasks (owner_instance) WHERE status = 'running';
