-- Applying an agent's inbox in one round trip. The worker used to do it as a transaction of
-- seven to nine statements per wakeup (claim the rows, start a turn or answer a call, mark the
-- rows done, list the ready turns), each a round trip: together the largest part of a step's
-- bookkeeping. The same steps, in the same order and under the same locks, now run inside one
-- function call. Being volatile, each statement in it takes a fresh snapshot, so a check made
-- after a lock (are all calls of the epoch answered?) sees what the lock's previous holder
-- committed, exactly as the separate statements did.
--
-- Threads (0024) run one turn at a time, their messages in the order sent. Every path that
-- starts or ends a thread's turn (applying the inbox, finishing a turn, canceling a task) locks
-- the thread row first, so two of them cannot both see the thread idle and start two turns.

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

-- Starts the turn of a thread's oldest pending message, if no turn of the thread is unfinished;
-- the caller holds the thread's lock. A chosen message that is no longer pending when its turn
-- would start gives its place to the next one, so the thread is never left idle with messages
-- waiting. No row when nothing started.
CREATE FUNCTION state.start_next_of_thread(p_project text, p_agent text, p_thread uuid)
RETURNS TABLE (task_id uuid, turn_id uuid, channel text) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_next uuid;
BEGIN
  -- Bounded: each pass sees one pending message leave that state for good.
  FOR pass IN 1..100 LOOP
    SELECT t.task_id INTO v_next FROM state.tasks t
    WHERE t.project_id = p_project AND t.thread_id = p_thread AND t.status = 'pending'
      AND NOT EXISTS (
        SELECT 1 FROM state.tasks r JOIN state.turns u ON u.task_id = r.task_id
        WHERE r.project_id = p_project AND r.thread_id = p_thread
          AND u.status IN ('ready', 'running', 'waiting'))
    ORDER BY t.thread_seq LIMIT 1;
    IF NOT FOUND THEN
      RETURN;
    END IF;
    RETURN QUERY SELECT * FROM state.start_task_turn(p_project, p_agent, v_next);
    IF FOUND THEN
      RETURN;
    END IF;
  END LOOP;
END;
$$;

-- Applies the pending inbox rows of one agent (at most 100, oldest first; rows another
-- instance is applying are skipped): a task starts its turn (a message of a thread only when no
-- turn of its thread is unfinished, and then the thread's oldest), a tool result answers its
-- call and readies the turn once no call of its epoch is pending. Returns what turn-events.ts reports:
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
  v_thread uuid;
  v_uuid constant text := '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
  v_ids uuid[];
  v_started jsonb := '[]';
  v_ignored jsonb := '[]';
  v_resumed jsonb := '[]';
BEGIN
  -- SKIP LOCKED: rows another instance is applying right now are its to apply.
  SELECT coalesce(array_agg(i.inbox_id ORDER BY i.created_at, i.inbox_id), '{}') INTO v_ids
  FROM (SELECT inbox_id, created_at FROM state.agent_inbox
        WHERE project_id = p_project AND agent_id = p_agent AND status = 'pending'
        ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED) i;
  -- The threads of the batch's messages are locked up front, in one order: two instances
  -- applying batches that name the same threads in another order would otherwise deadlock.
  PERFORM 1 FROM state.threads th
  WHERE th.project_id = p_project AND th.thread_id IN (
    SELECT k.thread_id FROM state.agent_inbox i
    JOIN state.tasks k ON k.project_id = p_project
      AND k.task_id = CASE WHEN i.correlation_id ~* v_uuid THEN i.correlation_id::uuid END
    WHERE i.inbox_id = ANY (v_ids) AND i.message_type = 'task' AND k.thread_id IS NOT NULL)
  ORDER BY th.thread_id
  FOR UPDATE;

  FOR r IN
    SELECT i.inbox_id, i.message_type, i.correlation_id, i.payload
    FROM unnest(v_ids) WITH ORDINALITY AS b(id, n)
    JOIN state.agent_inbox i ON i.inbox_id = b.id
    ORDER BY b.n
  LOOP
    IF r.message_type = 'task' THEN
      v_turn := NULL;
      v_thread := NULL;
      IF r.correlation_id ~* v_uuid THEN
        SELECT k.thread_id INTO v_thread FROM state.tasks k
        WHERE k.project_id = p_project AND k.task_id = r.correlation_id::uuid;
        IF v_thread IS NULL THEN
          SELECT x.task_id, x.turn_id, x.channel INTO v_task, v_turn, v_channel
          FROM state.start_task_turn(p_project, p_agent, r.correlation_id::uuid) x;
        ELSE
          -- Its thread's oldest waiting message starts, which may be another one; none while
          -- a turn of the thread is unfinished (the end of that turn starts the next).
          SELECT x.task_id, x.turn_id, x.channel INTO v_task, v_turn, v_channel
          FROM state.start_next_of_thread(p_project, p_agent, v_thread) x;
        END IF;
      END IF;
      IF v_turn IS NULL AND v_thread IS NOT NULL THEN
        v_ignored := v_ignored || jsonb_build_object('correlationId', r.correlation_id,
          'reason', 'its thread has a turn running; it starts its next message when that ends');
      ELSIF v_turn IS NULL THEN
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

-- Ends a turn whose step still holds its run token: the final card, the turn's and the task's
-- status, and, for a message of a thread, the start of the thread's next message, all in one
-- call. The thread is locked before the turn, as every path that starts or ends a thread's turn
-- does. No row when the step was fenced (its lease was taken over).
CREATE FUNCTION state.finish_turn(p_project text, p_agent text, p_task uuid, p_turn uuid,
  p_token uuid, p_status text, p_card uuid, p_author text, p_content jsonb, p_error jsonb)
RETURNS TABLE (card_id uuid, project_id text, kind text, tool_call_id text, author text,
  content jsonb, metadata jsonb, created_at timestamptz, next_task_id uuid, next_turn_id uuid,
  next_channel text) LANGUAGE plpgsql VOLATILE AS $$
#variable_conflict use_column
DECLARE
  v_thread uuid;
  v_step integer;
  c record;
  v_task uuid;
  v_turn uuid;
  v_channel text;
BEGIN
  SELECT th.thread_id INTO v_thread FROM state.threads th
  JOIN state.tasks k ON k.project_id = th.project_id AND k.thread_id = th.thread_id
  WHERE k.project_id = p_project AND k.task_id = p_task
  FOR UPDATE OF th;
  UPDATE state.turns u SET status = p_status, run_token = NULL, run_owner = NULL,
    lease_until = NULL, updated_at = now()
  WHERE u.turn_id = p_turn AND u.run_token = p_token AND u.status = 'running'
  RETURNING u.step INTO v_step;
  IF NOT FOUND THEN
    RETURN;
  END IF;
  INSERT INTO cards AS x (card_id, project_id, kind, tool_call_id, author, content, metadata)
  VALUES (p_card, p_project, 'final', NULL, p_author, p_content,
          jsonb_build_object('turn_id', p_turn, 'task_id', p_task, 'step', v_step))
  RETURNING x.card_id, x.project_id, x.kind, x.tool_call_id, x.author, x.content, x.metadata,
            x.created_at INTO c;
  UPDATE state.tasks k SET status = p_status, final_card_id = p_card, error = p_error,
    updated_at = now()
  WHERE k.project_id = p_project AND k.task_id = p_task;
  IF v_thread IS NOT NULL THEN
    SELECT x.task_id, x.turn_id, x.channel INTO v_task, v_turn, v_channel
    FROM state.start_next_of_thread(p_project, p_agent, v_thread) x;
  END IF;
  RETURN QUERY SELECT c.card_id, c.project_id, c.kind::text, c.tool_call_id, c.author, c.content,
    c.metadata, c.created_at, v_task, v_turn, v_channel;
END;
$$;
