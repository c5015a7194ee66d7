-- Two simplifications of the turn's functions.
--
-- A turn's first card holds its task's input as given (a string stays a string, any other JSON
-- value stays that value) instead of JSON text made here: state.json_text re-created JavaScript's
-- JSON.stringify (its key order, its spacing) in SQL so that the card held the text the worker
-- used to build. The store's turn readers now turn a structured input into that text
-- (turn-cards.ts), where JSON.stringify is at hand.
--
-- The project's registry, which a step reads only when it changed, is a function of its own
-- (state.project_registry), so state.step_context reads as a list of what a step reads.

CREATE OR REPLACE FUNCTION state.start_task_turn(p_project text, p_agent text, p_task uuid)
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
          jsonb_build_object('role', 'user', 'content', t.input),
          jsonb_build_object('turn_id', v_turn, 'task_id', t.task_id, 'step', 0));
  RETURN QUERY SELECT t.task_id, v_turn, t.channel;
END;
$$;

DROP FUNCTION state.json_text(jsonb);

-- The project's tools as a step reads them, with a digest of the row versions they were read
-- from (each tool's id and the transaction that wrote that version: any insert, update or
-- delete changes it, whatever the order transactions commit in). The tools' schemas are most of
-- what a step reads (tens of kilobytes of JSON for the built-in tools alone), and they rarely
-- change: a caller passing the digest it holds gets NULL for the registry while it is current.
CREATE FUNCTION state.project_registry(p_project text, p_digest text)
RETURNS TABLE (registry json, digest text) LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
DECLARE
  v_digest text;
BEGIN
  SELECT coalesce(md5(string_agg(t.tool_id::text || '/' || t.xmin::text, ',' ORDER BY t.tool_id)),
                  'none')
  INTO v_digest FROM resource.tools t WHERE t.project_id = p_project;
  IF p_digest IS NOT DISTINCT FROM v_digest THEN
    RETURN QUERY SELECT NULL::json, v_digest;
    RETURN;
  END IF;
  RETURN QUERY SELECT coalesce(json_agg(t ORDER BY t.name), '[]'), v_digest FROM (
    SELECT tool_id, project_id, name, target, description, category, tags, parameters, origin,
           options, spec, annotations, output_schema, enabled, definition_hash,
           pending_definition, version, deprecated, deprecation_message, created_at, updated_at
    FROM resource.tools WHERE project_id = p_project) t;
END $$;

-- What a step reads before asking the model (the store's StepContext): the agent's profile, the
-- project's tools (above), the tools attached to the agent (NULL when the agent is gone), the
-- turn's cards, its calls each with its result card, and the task's place in its thread.
-- plpgsql keeps the plan of each statement for the session.
CREATE OR REPLACE FUNCTION state.step_context(p_project text, p_agent text, p_turn uuid,
                                              p_task uuid, p_registry_digest text)
RETURNS TABLE (profile json, registry json, registry_digest text, attached json, cards json,
               calls json, place json)
LANGUAGE plpgsql STABLE AS $$
#variable_conflict use_column
BEGIN
  RETURN QUERY SELECT
    (SELECT row_to_json(p) FROM (
       SELECT p.profile_id, p.project_id, p.name, p.allowed_tools, p.allowed_internal_tools,
              p.model, p.system_prompt, p.created_at, p.updated_at
       FROM resource.agents a JOIN resource.profiles p ON p.profile_id = a.profile_id
       WHERE a.project_id = p_project AND a.agent_id = p_agent) p),
    reg.registry, reg.digest,
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
       WHERE project_id = p_project AND task_id = p_task) k)
  FROM state.project_registry(p_project, p_registry_digest) reg;
END $$;
