-- Threads: a conversation with one agent. Each message is an agent task of the thread, numbered
-- in the order it was sent (thread_seq); its turn's prompt holds the turns of the earlier
-- messages. One turn of a thread runs at a time: a message sent while one runs stays a pending
-- task (the thread's queue, durable) and its turn starts when the running turn ends, always the
-- lowest seq first. `messages` is the last seq handed out; the thread row is the lock that
-- orders starting a thread's turns against ending them.
CREATE TABLE state.threads (
  project_id text NOT NULL,
  thread_id  uuid NOT NULL,
  agent_id   text NOT NULL,
  channel    text NOT NULL,
  title      text,
  messages   integer NOT NULL DEFAULT 0,
  created_at timestamptz NOT NULL DEFAULT now(),
  updated_at timestamptz NOT NULL DEFAULT now(),
  PRIMARY KEY (project_id, thread_id),
  FOREIGN KEY (project_id, agent_id) REFERENCES resource.agents ON DELETE CASCADE
);
CREATE INDEX threads_agent ON state.threads (project_id, agent_id, thread_id);

ALTER TABLE state.tasks ADD COLUMN thread_id uuid, ADD COLUMN thread_seq integer;
ALTER TABLE state.tasks ADD CONSTRAINT tasks_thread
  FOREIGN KEY (project_id, thread_id) REFERENCES state.threads ON DELETE CASCADE;
ALTER TABLE state.tasks ADD CONSTRAINT tasks_thread_seq
  CHECK ((thread_id IS NULL) = (thread_seq IS NULL));
CREATE UNIQUE INDEX tasks_thread_order ON state.tasks (project_id, thread_id, thread_seq)
  WHERE thread_id IS NOT NULL;
