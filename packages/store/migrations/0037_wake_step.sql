-- A wakeup's work in one round trip: apply the agent's inbox, claim its oldest due turn and read
-- what that turn's step needs before it asks the model. Three statements were three round trips
-- per step between the worker and Postgres; each costs a socket write and a process wakeup on
-- both sides, which on a busy machine is most of what a short statement costs.

-- What a step reads before asking the model (the store's StepContext): the agent's profile, the
-- project's tools, the tools attached to the agent (NULL when the agent is gone), the turn's
-- cards, its calls each with its result card, and the task's place in its thread. plpgsql keeps
-- the plan of each statement for the session.
--
-- The project's tools are most of what a step reads (their schemas: tens of kilobytes of JSON
-- for the built-in tools alone, written out by Postgres and parsed by the worker at every
-- step), and they rarely change. So the registry comes with a digest of the row versions it
-- was read from (each tool's id and the transaction that wrote that version: any insert,
-- update or delete changes it, whatever the order transactions commit in), and a caller that
-- passes the digest it holds gets NULL for the registry while that is still current.
CREATE FUNCTION state.step_context(p_project text, p_agent text, p_turn uuid, p_task uuid,
                                   p_registry_digest text)
RETURNS TABLE (profile json, registry json, registry_digest text, attached json, cards json,
               calls json, place json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_digest text;
BEGIN
  SELECT coalesce(md5(string_agg(t.tool_id::text || '/' || t.xmin::text, ',' ORDER BY t.tool_id)),
                  'none')
  INTO v_digest FROM resource.tools t WHERE t.project_id = p_project;
  RETURN QUERY SELECT
    (SELECT row_to_json(p) FROM (
       SELECT p.profile_id, p.project_id, p.name, p.allowed_tools, p.allowed_internal_tools,
              p.model, p.system_prompt, p.created_at, p.updated_at
       FROM resource.agents a JOIN resource.profiles p ON p.profile_id = a.profile_id
       WHERE a.project_id = p_project AND a.agent_id = p_agent) p),
    CASE WHEN p_registry_digest IS DISTINCT FROM v_digest THEN
      (SELECT coalesce(json_agg(t ORDER BY t.name), '[]') FROM (
         SELECT tool_id, project_id, name, target, description, category, tags, parameters,
                origin, options, spec, annotations, output_schema, enabled, definition_hash,
                pending_definition, version, deprecated, deprecation_message, created_at,
                updated_at
         FROM resource.tools WHERE project_id = p_project) t)
    END,
    v_digest,
    CASE WHEN EXISTS (SELECT 1 FROM resource.agents
                      WHERE project_id = p_project AND agent_id = p_agent) THEN
      (SELECT coalesce(json_agg(x ORDER BY x.name), '[]') FROM (
         SELECT t.name, t.target, t.description, t.category, t.parameters, t.enabled, at.config,
                at.created_at AS attached_at
         FROM resource.agent_tools at JOIN resource.tools t ON t.tool_id = at.tool_id
         WHERE at.project_id = p_project AND at.agent_id = p_agent) x)
    END,
    (SELECT coalesce(json_agg(c ORDER BY c.created_at, c.card_id), '[]') FROM (
       SELECT card_id, project_id, kind, tool_call_id, author, content, metadata, created_at
       FROM cards
       WHERE metadata ? 'turn_id' AND metadata->>'turn_id' = p_turn::text
         AND project_id = p_project) c),
    (SELECT coalesce(json_agg(json_build_object('call', c, 'result', r) ORDER BY c.epoch, c.seq),
                     '[]')
     FROM (SELECT tool_call_id, turn_id, epoch, seq, tool_name, arguments, status, deadline_ms,
                  published_at, result_card_id
           FROM state.turn_calls WHERE turn_id = p_turn) c
     -- One index probe per call (LATERAL, LIMIT 1): as a plain join the planner may hash every
     -- card of the project.
     LEFT JOIN LATERAL (
       SELECT card_id, project_id, kind, tool_call_id, author, content, metadata, created_at
       FROM cards WHERE card_id = c.result_card_id AND project_id = p_project LIMIT 1) r ON true),
    (SELECT row_to_json(k) FROM (
       SELECT thread_id, thread_seq FROM state.tasks
       WHERE project_id = p_project AND task_id = p_task) k);
END $$;

-- Applies the agent's inbox (when p_apply), claims its oldest due turn under a new lease and
-- returns the turn with its step context (the registry NULL when p_registry_digest is current);
-- no turn (and NULL context) when none is due. Its statements keep their cached plans (see
-- apply_inbox below).
CREATE FUNCTION state.wake_step(p_project text, p_agent text, p_instance text, p_token uuid,
                                p_lease_ms float8, p_apply boolean, p_registry_digest text)
RETURNS TABLE (applied jsonb, turn json, profile json, registry json, registry_digest text,
               attached json, cards json, calls json, place json)
LANGUAGE plpgsql VOLATILE SET plan_cache_mode = force_generic_plan AS $$
#variable_conflict use_column
DECLARE
  v_applied jsonb;
  v_turn state.turns;
BEGIN
  IF p_apply THEN
    v_applied := state.apply_inbox(p_project, p_agent, p_instance);
  END IF;
  UPDATE state.turns SET status = 'running', claims = claims + 1, run_token = p_token,
         run_owner = p_instance, lease_until = now() + make_interval(secs => p_lease_ms / 1000),
         updated_at = now()
  WHERE turn_id = (
    SELECT t.turn_id FROM state.turns t
    WHERE (t.status = 'ready' OR (t.status = 'running' AND t.lease_until < now()))
      AND t.project_id = p_project AND t.agent_id = p_agent
    ORDER BY t.updated_at LIMIT 1 FOR UPDATE SKIP LOCKED)
  RETURNING * INTO v_turn;
  IF NOT FOUND THEN
    RETURN QUERY SELECT v_applied, NULL::json, NULL::json, NULL::json, NULL::text, NULL::json,
                        NULL::json, NULL::json, NULL::json;
    RETURN;
  END IF;
  RETURN QUERY SELECT v_applied, row_to_json(v_turn), x.profile, x.registry, x.registry_digest,
                      x.attached, x.cards, x.calls, x.place
    FROM state.step_context(p_project, p_agent, v_turn.turn_id, v_turn.task_id,
                            p_registry_digest) x;
END $$;

-- Statements over an array of ids (the inbox rows being applied) were planned anew at every
-- call: a plan for the actual array looked cheaper than the cached one, which assumes ten
-- elements. Their plans are index lookups either way; the cached one is kept.
ALTER FUNCTION state.apply_inbox(text, text, text) SET plan_cache_mode = force_generic_plan;
