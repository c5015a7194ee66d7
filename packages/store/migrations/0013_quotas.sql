-- Per-project quotas of the skills service ([quotas] in the configuration). Sandboxes and
-- running tasks are counted from their own rows; calls in flight have no row of their own until
-- they last, so each holds a slot here while it runs. A slot's expiry (the call's deadline plus a
-- margin) frees the slots of an instance that died mid-call. Unlogged: a slot lives as long as its
-- call, so nothing of it needs to survive a Postgres crash, and writes to it cost no WAL flush at
-- commit (the take below runs under the project's lock, so that flush would bound every
-- project's call rate).
CREATE UNLOGGED TABLE state.call_slots (
  project_id   text NOT NULL,
  tool_call_id text NOT NULL,
  instance_id  text NOT NULL,
  expires_at   timestamptz NOT NULL,
  PRIMARY KEY (project_id, tool_call_id)
);

-- The quota counts: running heads of one project.
CREATE INDEX skill_tasks_running_project ON state.skill_tasks (project_id) WHERE status = 'running';
CREATE INDEX skill_jobs_running_project ON state.skill_jobs (project_id) WHERE status = 'running';

-- Takes a call's slot unless the project already has `p_limit` live ones (its own slot, on a
-- redelivery, does not count against it). One statement for the caller; inside, the project's
-- advisory lock comes first and each query below it takes a fresh snapshot (a volatile
-- function), so two instances admitting calls of one project at once are counted one after the
-- other. Returns -1 when the slot was taken, else the live slots counted.
CREATE FUNCTION state.take_call_slot(p_project text, p_call text, p_instance text,
                                     p_ttl_ms double precision, p_limit integer)
RETURNS integer LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  n integer;
BEGIN
  PERFORM pg_advisory_xact_lock(hashtextextended('toolmesh.quota:calls:' || p_project, 0));
  SELECT count(*) INTO n FROM state.call_slots
  WHERE project_id = p_project AND tool_call_id <> p_call AND expires_at > now();
  IF n >= p_limit THEN
    RETURN n;
  END IF;
  -- Lapsed slots (an instance died mid-call) are cleared now and then, not on every call.
  IF random() < 0.01 THEN
    DELETE FROM state.call_slots WHERE project_id = p_project AND expires_at <= now();
  END IF;
  INSERT INTO state.call_slots (project_id, tool_call_id, instance_id, expires_at)
  VALUES (p_project, p_call, p_instance, now() + p_ttl_ms * interval '1 millisecond')
  ON CONFLICT (project_id, tool_call_id) DO UPDATE
    SET instance_id = EXCLUDED.instance_id, expires_at = EXCLUDED.expires_at;
  RETURN -1;
END;
$$;
