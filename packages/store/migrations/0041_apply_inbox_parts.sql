-- state.apply_inbox (0027) in parts a reader can follow: the batch and its thread locks, a task
-- row, a result row, and the loop that applies them in order. Same statements, same order, same
-- locks and the same answer as before; each part is a function of its own, named for what it
-- does, so no function holds the whole inbox in 120 lines.

-- Locks the agent's pending inbox rows (at most 100, oldest first; rows another instance is
-- applying are skipped: SKIP LOCKED) and the threads of the batch's messages, in one order (two
-- instances applying batches that name the same threads in another order would otherwise
-- deadlock). Returns the rows' ids, oldest first.
CREATE FUNCTION state.lock_inbox_batch(p_project text, p_agent text)
RETURNS uuid[] LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  v_uuid constant text := '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
  v_ids uuid[];
BEGIN
  SELECT coalesce(array_agg(i.inbox_id ORDER BY i.created_at, i.inbox_id), '{}') INTO v_ids
  FROM (SELECT inbox_id, created_at FROM state.agent_inbox
        WHERE project_id = p_project AND agent_id = p_agent AND status = 'pending'
        ORDER BY created_at LIMIT 100 FOR UPDATE SKIP LOCKED) i;
  PERFORM 1 FROM state.threads th
  WHERE th.project_id = p_project AND th.thread_id IN (
    SELECT k.thread_id FROM state.agent_inbox i
    JOIN state.tasks k ON k.project_id = p_project
      AND k.task_id = CASE WHEN i.correlation_id ~* v_uuid THEN i.correlation_id::uuid END
    WHERE i.inbox_id = ANY (v_ids) AND i.message_type = 'task' AND k.thread_id IS NOT NULL)
  ORDER BY th.thread_id
  FOR UPDATE;
  RETURN v_ids;
END $$;

-- A task row: the task's turn starts (a message of a thread only when no turn of its thread is
-- unfinished, and then the thread's oldest, which may be another message; the end of the
-- running turn starts the next). Returns {taskId, turnId, channel} for a started turn, else
-- {correlationId, reason}. The caller holds the thread's lock.
CREATE FUNCTION state.apply_inbox_task(p_project text, p_agent text, p_correlation text)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  v_uuid constant text := '^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$';
  v_thread uuid;
  s record;
BEGIN
  IF p_correlation ~* v_uuid THEN
    SELECT k.thread_id INTO v_thread FROM state.tasks k
    WHERE k.project_id = p_project AND k.task_id = p_correlation::uuid;
    IF v_thread IS NULL THEN
      SELECT * INTO s FROM state.start_task_turn(p_project, p_agent, p_correlation::uuid);
    ELSE
      SELECT * INTO s FROM state.start_next_of_thread(p_project, p_agent, v_thread);
    END IF;
    IF s.turn_id IS NOT NULL THEN
      RETURN jsonb_build_object('taskId', s.task_id, 'turnId', s.turn_id, 'channel', s.channel);
    END IF;
  END IF;
  RETURN jsonb_build_object('correlationId', p_correlation, 'reason',
    CASE WHEN v_thread IS NOT NULL
         THEN 'its thread has a turn running; it starts its next message when that ends'
         ELSE 'task not pending' END);
END $$;

-- A tool result row: answers its call and readies the turn once no call of its epoch is
-- pending. Returns NULL when applied, else {correlationId, reason} (no such call, a turn that
-- moved on, a stale epoch, a call already answered). Locks the turn before its calls, as every
-- turn write does.
CREATE FUNCTION state.apply_inbox_result(p_project text, p_correlation text, p_payload jsonb)
RETURNS jsonb LANGUAGE plpgsql VOLATILE AS $$
DECLARE
  c record;
  u record;
  v_epoch numeric;
BEGIN
  SELECT tc.turn_id, tc.epoch INTO c FROM state.turn_calls tc
  WHERE tc.project_id = p_project AND tc.tool_call_id = p_correlation;
  IF NOT FOUND THEN
    RETURN jsonb_build_object('correlationId', p_correlation, 'reason', 'no turn made this call');
  END IF;
  SELECT t.status, t.epoch INTO u FROM state.turns t WHERE t.turn_id = c.turn_id FOR UPDATE;
  IF NOT FOUND OR u.status <> 'waiting' OR c.epoch <> u.epoch THEN
    RETURN jsonb_build_object('correlationId', p_correlation, 'reason',
      format('turn is at epoch %s (%s), call was of epoch %s', u.epoch, u.status, c.epoch));
  END IF;
  v_epoch := CASE WHEN jsonb_typeof(p_payload->'turn_epoch') = 'number'
                  THEN (p_payload->>'turn_epoch')::numeric END;
  IF v_epoch IS NOT NULL AND v_epoch <> u.epoch THEN
    RETURN jsonb_build_object('correlationId', p_correlation, 'reason',
      format('result carries epoch %s, turn is at %s', v_epoch, u.epoch));
  END IF;
  UPDATE state.turn_calls SET status = 'done', result_card_id = (p_payload->>'card_id')::uuid
  WHERE project_id = p_project AND tool_call_id = p_correlation AND status = 'pending';
  IF NOT FOUND THEN
    RETURN jsonb_build_object('correlationId', p_correlation, 'reason', 'call already answered');
  END IF;
  UPDATE state.turns SET status = 'ready', updated_at = now()
  WHERE turn_id = c.turn_id AND status = 'waiting' AND epoch = u.epoch
    AND NOT EXISTS (SELECT 1 FROM state.turn_calls
                    WHERE turn_id = c.turn_id AND epoch = u.epoch AND status = 'pending');
  RETURN NULL;
END $$;

-- Applies the pending inbox rows of one agent in order (the parts above) and marks them done.
-- Returns what turn-events.ts reports: {started: [{taskId, turnId, channel}], resumed: [turn
-- ids], ignored: [{correlationId, reason}], applied: n}.
CREATE OR REPLACE FUNCTION state.apply_inbox(p_project text, p_agent text, p_instance text)
RETURNS jsonb LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  r record;
  v_out jsonb;
  v_ids uuid[] := state.lock_inbox_batch(p_project, p_agent);
  v_started jsonb := '[]';
  v_ignored jsonb := '[]';
  v_resumed jsonb := '[]';
BEGIN
  FOR r IN
    SELECT i.message_type, i.correlation_id, i.payload
    FROM unnest(v_ids) WITH ORDINALITY AS b(id, n)
    JOIN state.agent_inbox i ON i.inbox_id = b.id
    ORDER BY b.n
  LOOP
    v_out := CASE WHEN r.message_type = 'task'
                  THEN state.apply_inbox_task(p_project, p_agent, r.correlation_id)
                  ELSE state.apply_inbox_result(p_project, r.correlation_id, r.payload) END;
    IF v_out ? 'turnId' THEN
      v_started := v_started || v_out;
    ELSIF v_out IS NOT NULL THEN
      v_ignored := v_ignored || v_out;
    END IF;
  END LOOP;
  IF cardinality(v_ids) > 0 THEN
    UPDATE state.agent_inbox SET status = 'done', claimed_by = p_instance, claimed_at = now()
    WHERE inbox_id = ANY (v_ids);
    SELECT coalesce(jsonb_agg(t.turn_id), '[]') INTO v_resumed FROM state.turns t
    WHERE t.project_id = p_project AND t.agent_id = p_agent AND t.status = 'ready';
  END IF;
  RETURN jsonb_build_object('started', v_started, 'resumed', v_resumed, 'ignored', v_ignored,
                            'applied', cardinality(v_ids));
END $$;
