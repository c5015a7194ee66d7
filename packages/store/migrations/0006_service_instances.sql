-- Service instances' liveness: each instance upserts its row on start and on every reaper tick.
-- A task head whose owner has not been seen for a while belongs to a dead instance, and the
-- reaper of any instance may end it. host and pid say where the instance ran (pids are reused,
-- so they only narrow where to look; the heads' pid, start time and command line prove more).
CREATE TABLE state.service_instances (
  instance_id   text PRIMARY KEY,
  service       text NOT NULL,
  host          text NOT NULL,
  pid           integer NOT NULL,
  started_at    timestamptz NOT NULL,
  last_seen_at  timestamptz NOT NULL DEFAULT now()
);
