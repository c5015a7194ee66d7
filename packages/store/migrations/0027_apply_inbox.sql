-- Applying an agent's inbox in one round trip. The worker used to do it as a transaction of
-- seven to nine statements per wakeup (claim the rows, start a turn or answer a call, mark the
-- rows done, list the ready turns), each a round trip: together the largest part of a step's
-- bookkeeping. The same steps, in the same order and under the same locks, now run inside one
-- function call. Being volatile, each statement in it takes a fresh snapshot, so a check made
-- after a lock (are all calls of the epoch answered?) sees what the lock's previous holder
-- committed, exactly as the separate statements did.

-- A UUIDv7 (48-bit Unix milliseconds, then random bits), like the ids the services make.
CREATE FUNCTION state.uuid_v7() RETURNS uuid LANGUAGE sql VOLATILE AS $$
  SELECT encode(
    set_bit(set_bit(
      overlay(uuid_send(gen_random_uuid())
              PLACING substring(int8send(floor(extract(epoch FROM clock_timestamp()) * 1000)::bigint)
                                FROM 3)
              FROM 1 FOR 6),
      52, 1), 53, 1),
    'hex')::uuid
$$;

-- JSON text of a value as JavaScript's JSON.stringify writes it after reading it back from
-- jsonb: no spaces, and an object's array-index keys ("0", "17") first in numeric order, then
-- the others in stored order. (jsonb::text puts a space after every colon and comma.) Numbers
-- are written as stored, which differs from JavaScript only past 1e21 or below 1e-6, where
-- JavaScript switches to exponents.
CREATE FUNCTION state.json_text(v jsonb) RETURNS text LANGUAGE plpgsql IMMUTABLE AS $$
BEGIN
  CASE jsonb_typeof(v)
    WHEN 'object' THEN
      RETURN '{' || coalesce((
        SELECT string_agg(to_json(e.key)::text || ':' || state.json_text(e.value), ','
                          ORDER BY e.ix DESC, CASE WHEN e.ix THEN e.key::bigint END, e.n)
        FROM (SELECT key, value, n,
                     CASE WHEN key ~ '^(0|[1-9][0-9]{0,9})$' THEN key::bigint < 4294967295
                          ELSE false END AS ix
              FROM jsonb_each(v) WITH ORDINALITY AS x(key, value, n)) e), '') || '}';
    WHEN 'array' THEN
      RETURN '[' || coalesce((
        SELECT string_agg(state.json_text(x), ',' ORDER BY n)
        FROM jsonb_array_elements(v) WITH ORDINALITY AS a(x, n)), '') || ']';
    ELSE
      RETURN v::text;
  END CASE;
END;
$$;

-- Starts the turn of a pending task: the task runs, and its input becomes the turn's first
-- (user) card. No row when the task is not pending (started already, canceled, unknown).
CREATE FUNCTION state.start_task_turn(p_project text, p_agent text, p_task uuid)
RETURNS TABLE (task_id uuid, turn_id uuid, channel text) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  t record;
  v_turn uuid := state.uuid_v7();
BEGIN
  UPDATE state.tasks k SET status = 'running', updated_at = now()
  WHERE k.project_id = p_project AND k.agent_id = p_agent AND k.task_id = p_task
    AND k.status = 'pending'
  RETURNING k.task_id, k.channel, k.input INTO t;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO state.turns (turn_id, project_id, agent_id, channel, task_id)
  VALUES (v_turn, p_project, p_agent, t.channel, t.task_id);
  INSERT INTO cards (card_id, project_id, kind, author, content, metadata)
  VALUES (state.uuid_v7(), p_project, 'message', 'user',
          jsonb_build_object('role', 'user', 'content',
            CASE WHEN jsonb_typeof(t.input) = 'string' THEN t.input #>> '{}'
                 ELSE state.json_text(t.input) END),
          jsonb_build_object('turn_id', v_turn, 'task_id', t.task_id, 'step', 0));
  RETURN QUERY SELECT t.task_id, v_turn, t.channel;
END;
$$;

-- Applies the pending inbox rows of one agent (at most 100, oldest first; rows another
-- instance is applying are skipped): a task starts its turn, a tool result answers its call and
-- readies the turn once no call of its epoch is pending. Returns what turn-events.ts reports:
-- {started: [{taskId, turnId, channel}], resumed: [turn ids], ignored: [{correlationId,
-- reason}], applied: n}.
CREATE FUNCTION state.apply_inbox(p_project text, p_agent text, p_instance text)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  r record;
  c record;
  u record;
  v_epoch numeric;
  v_task uuid;
  v_turn uuid;
  v_channel text;
  v_ids uuid[] := '{}';
  v_started jsonb := '[]';
  v_ignored jsonb := '[]';
  v_resumed jsonb := '[]';
BEGIN
  FOR r IN
    SELECT inbox_id, message_type, correlation_id, payload FROM state.agent_inbox
    WHERE project_id = p_project AND agent_id = p_agent AND status = 'pending'
    ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED
  LOOP
    v_ids := v_ids || r.inbox_id;
    IF r.message_type = 'task' THEN
      v_turn := NULL;
      IF r.correlation_id ~* '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$' THEN
        SELECT x.task_id, x.turn_id, x.channel INTO v_task, v_turn, v_channel
        FROM state.start_task_turn(p_project, p_agent, r.correlation_id::uuid) x;
      END IF;
      IF v_turn IS NULL THEN
        v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
                                                     'reason', 'task not pending');
      ELSE
        v_started := v_started || jsonb_build_object('taskId', v_task, 'turnId', v_turn,
                                                     'channel', v_channel);
      END IF;
      CONTINUE;
    END IF;

    SELECT tc.turn_id, tc.epoch INTO c FROM state.turn_calls tc
    WHERE tc.project_id = p_project AND tc.tool_call_id = r.correlation_id;
    IF NOT FOUND THEN
      v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
                                                   'reason', 'no turn made this call');
      CONTINUE;
    END IF;
    SELECT t.status, t.epoch INTO u FROM state.turns t WHERE t.turn_id = c.turn_id FOR UPDATE;
    IF NOT FOUND OR u.status <> 'waiting' OR c.epoch <> u.epoch THEN
      v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
        'reason', format('turn is at epoch %s (%s), call was of epoch %s',
                         u.epoch, u.status, c.epoch));
      CONTINUE;
    END IF;
    v_epoch := CASE WHEN jsonb_typeof(r.payload->'turn_epoch') = 'number'
                    THEN (r.payload->>'turn_epoch')::numeric END;
    IF v_epoch IS NOT NULL AND v_epoch <> u.epoch THEN
      v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
        'reason', format('result carries epoch %s, turn is at %s', v_epoch, u.epoch));
      CONTINUE;
    END IF;
    UPDATE state.turn_calls SET status = 'done', result_card_id = (r.payload->>'card_id')::uuid
    WHERE project_id = p_project AND tool_call_id = r.correlation_id AND status = 'pending';
    IF NOT FOUND THEN
      v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
                                                   'reason', 'call already answered');
      CONTINUE;
    END IF;
    UPDATE state.turns SET status = 'ready', updated_at = now()
    WHERE turn_id = c.turn_id AND status = 'waiting' AND epoch = u.epoch
      AND NOT EXISTS (SELECT 1 FROM state.turn_calls
                      WHERE turn_id = c.turn_id AND epoch = u.epoch AND status = 'pending');
  END LOOP;

  IF cardinality(v_ids) > 0 THEN
    UPDATE state.agent_inbox SET status = 'done', claimed_by = p_instance, claimed_at = now()
    WHERE inbox_id = ANY (v_ids);
    SELECT coalesce(jsonb_agg(t.turn_id), '[]') INTO v_resumed FROM state.turns t
    WHERE t.project_id = p_project AND t.agent_id = p_agent AND t.status = 'ready';
  END IF;
  RETURN jsonb_build_object('started', v_started, 'resumed', v_resumed, 'ignored', v_ignored,
                            'applied', cardinality(v_ids));
END;
$$;
