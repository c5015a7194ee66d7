-- Agent turns: the durable state of an agent working on a task, so that no instance holds a
-- turn in memory. A turn is `ready` (a step is due), `running` (one instance runs a step under a
-- lease, fenced by run_token), `waiting` (suspended on tool calls of its current epoch), or
-- finished. Each suspension bumps the epoch; results of an older epoch change nothing.
CREATE TABLE state.turns (
  turn_id     uuid PRIMARY KEY,
  project_id  text NOT NULL,
  agent_id    text NOT NULL,
  channel     text NOT NULL,
  task_id     uuid NOT NULL REFERENCES state.tasks ON DELETE CASCADE,
  status      text NOT NULL DEFAULT 'ready'
              CHECK (status IN ('ready', 'running', 'waiting', 'succeeded', 'failed')),
  epoch       integer NOT NULL DEFAULT 0,
  step        integer NOT NULL DEFAULT 0,
  -- Claims since the last recorded step: a step that keeps failing is not retried forever.
  claims      integer NOT NULL DEFAULT 0,
  run_token   uuid,
  run_owner   text,
  lease_until timestamptz,
  created_at  timestamptz NOT NULL DEFAULT now(),
  updated_at  timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX turns_task ON state.turns (task_id);
CREATE INDEX turns_runnable ON state.turns (updated_at) WHERE status IN ('ready', 'running');

-- The tool calls of each step: what the turn waits for, until when, and the card that answered.
CREATE TABLE state.turn_calls (
  project_id     text NOT NULL,
  tool_call_id   text NOT NULL,
  turn_id        uuid NOT NULL REFERENCES state.turns ON DELETE CASCADE,
  epoch          integer NOT NULL,
  seq            integer NOT NULL,
  tool_name      text NOT NULL,
  arguments      jsonb NOT NULL,
  status         text NOT NULL CHECK (status IN ('pending', 'done', 'timeout')),
  deadline_ms    integer NOT NULL,
  deadline_at    timestamptz,
  published_at   timestamptz,
  result_card_id uuid,
  created_at     timestamptz NOT NULL DEFAULT now()
);
CREATE UNIQUE INDEX turn_calls_once ON state.turn_calls (project_id, md5(tool_call_id));
CREATE INDEX turn_calls_turn ON state.turn_calls (turn_id, epoch);
CREATE INDEX turn_calls_pending ON state.turn_calls (deadline_at) WHERE status = 'pending';

-- A turn's conversation is rebuilt from its cards.
CREATE INDEX cards_turn ON cards USING hash ((metadata->>'turn_id')) WHERE metadata ? 'turn_id';
