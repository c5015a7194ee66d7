-- A tool result is applied to its turn by the statement that writes its card (the store's
-- calls/results.ts), no longer through an inbox row the agent worker applies at its next
-- wakeup: the call is answered and, when it was the last of its epoch, the turn is ready, in the
-- same commit as the card. The worker's wakeup then only claims. A result that changes nothing
-- (a turn that moved on, was canceled or finished; a call already answered or timed out) is
-- still filed in the inbox, where the worker's next apply reports why; rows a tool service of an
-- earlier version filed are applied there as before.

-- Answers a call with its result card and readies the call's turn once no call of its epoch is
-- pending. Returns NULL when applied, else why not (no such call, a turn that moved on, a stale
-- epoch, a call already answered). Locks the turn before the call, as every turn write does;
-- each statement takes a fresh snapshot (the function is volatile), so the check that the epoch
-- is answered sees what a concurrent result committed before this one got the turn's lock.
CREATE FUNCTION state.apply_result(p_project text, p_call text, p_card uuid, p_epoch numeric)
RETURNS text LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
DECLARE
  c record;
  u record;
BEGIN
  SELECT tc.turn_id, tc.epoch INTO c FROM state.turn_calls tc
  WHERE tc.project_id = p_project AND tc.tool_call_id = p_call;
  IF NOT FOUND THEN
    RETURN 'no turn made this call';
  END IF;
  SELECT t.status, t.epoch INTO u FROM state.turns t WHERE t.turn_id = c.turn_id FOR UPDATE;
  IF NOT FOUND OR u.status <> 'waiting' OR c.epoch <> u.epoch THEN
    RETURN format('turn is at epoch %s (%s), call was of epoch %s', u.epoch, u.status, c.epoch);
  END IF;
  IF p_epoch IS NOT NULL AND p_epoch <> u.epoch THEN
    RETURN format('result carries epoch %s, turn is at %s', p_epoch, u.epoch);
  END IF;
  UPDATE state.turn_calls SET status = 'done', result_card_id = p_card
  WHERE project_id = p_project AND tool_call_id = p_call AND status = 'pending';
  IF NOT FOUND THEN
    RETURN 'call already answered';
  END IF;
  UPDATE state.turns SET status = 'ready', updated_at = now()
  WHERE turn_id = c.turn_id AND status = 'waiting' AND epoch = u.epoch
    AND NOT EXISTS (SELECT 1 FROM state.turn_calls
                    WHERE turn_id = c.turn_id AND epoch = u.epoch AND status = 'pending');
  RETURN NULL;
END $$;

-- The inbox keeps tasks, and the results their card statement could not apply: such a row is
-- applied (or reported ignored) by the same function.
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
      ELSE jsonb_build_object('correlationId', r.correlation_id, 'reason',
        state.apply_result(p_project, r.correlation_id, (r.payload->>'card_id')::uuid,
          CASE WHEN jsonb_typeof(r.payload->'turn_epoch') = 'number'
               THEN (r.payload->>'turn_epoch')::numeric END)) END;
    IF v_out ? 'turnId' THEN
      v_started := v_started || v_out;
    ELSIF v_out->'reason' <> 'null' THEN
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

DROP FUNCTION state.apply_inbox_result(text, text, jsonb);
