-- Schedules: a cron pattern that fires a tool call or an agent task. Any api instance may fire a
-- due schedule; the row is locked while it fires (FOR UPDATE SKIP LOCKED) and next_fire_at moves
-- on in the same transaction as the firing row, so each tick fires once. The tick's time is part
-- of the call's tool_call_id (or the task's id), so a firing published twice is still one call.
CREATE TABLE resource.schedules (
  project_id   text NOT NULL REFERENCES resource.projects ON DELETE CASCADE,
  name         text NOT NULL,
  cron         text NOT NULL,
  timezone     text NOT NULL DEFAULT 'UTC',
  kind         text NOT NULL CHECK (kind IN ('tool', 'agent')),
  tool         text,
  arguments    jsonb,
  agent_id     text,
  input        jsonb,
  channel      text NOT NULL,
  catch_up     text NOT NULL DEFAULT 'skip' CHECK (catch_up IN ('skip', 'once')),
  paused       boolean NOT NULL DEFAULT false,
  next_fire_at timestamptz,
  last_fire_at timestamptz,
  created_at   timestamptz NOT NULL DEFAULT now(),
  updated_at   timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, name),
  CHECK ((kind = 'tool') = (tool IS NOT NULL AND agent_id IS NULL))
);
CREATE INDEX schedules_due ON resource.schedules (next_fire_at) WHERE NOT paused;

-- One row per tick that fired: what it started (a tool call or a task) and whether its message
-- is out yet. A firing whose publish was lost (the instance died after the commit) is published
-- again by the next pass under the same ids.
CREATE TABLE state.schedule_firings (
  project_id   text NOT NULL,
  name         text NOT NULL,
  tick_at      timestamptz NOT NULL,
  tool_call_id text,
  task_id      uuid,
  missed       integer NOT NULL DEFAULT 0,
  fired_at     timestamptz NOT NULL DEFAULT now(),
  published_at timestamptz,
  fired_by     text NOT NULL,
  PRIMARY KEY (project_id, name, tick_at),
  FOREIGN KEY (project_id, name) REFERENCES resource.schedules ON DELETE CASCADE
);
CREATE INDEX schedule_firings_unpublished ON state.schedule_firings (fired_at)
  WHERE published_at IS NULL;
