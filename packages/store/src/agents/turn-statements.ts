// The agent turn's state machine, statement by statement: every write that moves a turn (and the
// reads a step makes), in the order a turn meets them. The agent worker runs the machine
// (services/agent-worker/src/turn/step.ts draws it); the store's turns repository (turns.ts,
// turn-commits.ts, turn-events.ts) runs these statements for it. A plpgsql function named here
// lives in the migration given beside it.
//
//   (task pending) --start-->   ready        APPLY_INBOX, or the first half of WAKE:
//                                            state.apply_inbox (0044) -> apply_inbox_task (0041)
//   ready | running, lease lapsed
//                  --claim-->   running      WAKE (state.wake_step, 0037: inbox, claim and
//                                            STEP_CONTEXT in one statement) or CLAIM (the scan)
//   running        --renew-->   running      RENEW, while the model thinks
//   running        --commit-->  waiting      COMMIT_STEP (ready when the worker answered every
//                                            call itself); MARK_PUBLISHED starts the deadlines
//   running        --finish-->  succeeded | failed   FINISH (state.finish_turn, 0027; the thread's
//                                            next message starts: start_next_of_thread, 0027)
//   waiting        --result-->  ready        state.apply_result (0044), called by the statement
//                                            that writes the result card (calls/results.ts)
//   waiting        --deadline-> ready        PAST_DEADLINE, then per turn LOCK_TURN,
//                                            CALLS_PAST_DEADLINE, CALL_TIMEOUT, READY_IF_ANSWERED
//   unfinished     --cancel-->  canceled     the api (task-cancel.ts)
//
// Every move locks the turn row before its calls, and every write of a step is fenced by the run
// token of the claim it ran under (a step whose lease was taken over writes nothing).
import { CARD_COLUMNS } from './turn-cards.ts';

export const TURN_COLUMNS = `turn_id, project_id, agent_id, channel, task_id, status, epoch, step,
  claims, run_token, run_owner, lease_until, created_at, updated_at`;

export const CALL_COLUMNS = `tool_call_id, turn_id, epoch, seq, tool_name, arguments, status,
  deadline_ms, published_at, result_card_id`;

/** Applies an agent's pending inbox rows: $1 project, $2 agent, $3 instance. */
export const APPLY_INBOX = 'SELECT state.apply_inbox($1, $2, $3) AS applied';

/**
 * A wakeup's claim: applies the inbox when $6, claims the agent's oldest due turn under a new
 * lease ($4 run token, $5 lease ms) and reads its step context ($7 the registry digest held).
 */
export const WAKE = 'SELECT * FROM state.wake_step($1, $2, $3, $4, $5, $6, $7)';

/**
 * The scan's claim: the oldest due turn of one agent ($1 project, $2 agent; `scoped`) or of any.
 * Two statements rather than one with an optional scope, so each has a plan that uses its index.
 */
export const CLAIM = (scoped: boolean) => {
  const n = scoped ? 2 : 0;
  return `UPDATE state.turns SET status = 'running', claims = claims + 1, run_token = $${n + 2},
     run_owner = $${n + 1}, lease_until = now() + make_interval(secs => $${n + 3}::float8 / 1000),
     updated_at = now()
   WHERE turn_id = (
     SELECT turn_id FROM state.turns
     WHERE (status = 'ready' OR (status = 'running' AND lease_until < now()))
       ${scoped ? 'AND project_id = $1 AND agent_id = $2' : ''}
     ORDER BY updated_at LIMIT 1 FOR UPDATE SKIP LOCKED)
   RETURNING ${TURN_COLUMNS}`;
};

/** What a step reads before asking the model, when its claim did not read it (the scan's). */
export const STEP_CONTEXT = 'SELECT * FROM state.step_context($1, $2, $3, $4, $5)';

export const RENEW = `UPDATE state.turns
  SET lease_until = now() + make_interval(secs => $3::float8 / 1000)
  WHERE turn_id = $1 AND run_token = $2 AND status = 'running' RETURNING turn_id`;

/**
 * The step's answer: the turn moves to $3 (waiting, or ready when the worker answered every call)
 * at the next epoch, with the answer's cards ($6-$9) and its calls ($10-$15), all following from
 * the fenced UPDATE of the turn, so a step that lost its lease writes none of them.
 */
export const COMMIT_STEP = `
WITH turn AS (
  UPDATE state.turns SET epoch = epoch + 1, step = step + 1, status = $3::text, claims = 0,
    run_token = NULL, run_owner = NULL, lease_until = NULL, updated_at = now()
  WHERE turn_id = $1 AND run_token = $2 AND status = 'running'
  RETURNING turn_id, task_id, epoch, step
),
card AS (
  INSERT INTO cards (card_id, project_id, kind, tool_call_id, author, content, metadata)
  SELECT c.card_id, $4::text, c.kind, c.tool_call_id, $5::text, c.content,
         jsonb_build_object('turn_id', turn.turn_id, 'task_id', turn.task_id,
                            'epoch', turn.epoch, 'step', turn.step)
  FROM turn, unnest($6::uuid[], $7::text[], $8::text[], $9::jsonb[])
         AS c(card_id, kind, tool_call_id, content)
),
call AS (
  INSERT INTO state.turn_calls (project_id, tool_call_id, turn_id, epoch, seq, tool_name,
    arguments, status, deadline_ms, result_card_id)
  SELECT $4::text, c.tool_call_id, turn.turn_id, turn.epoch, c.seq - 1, c.tool_name, c.arguments, c.status,
         c.deadline_ms, c.result_card_id
  FROM turn, unnest($10::text[], $11::text[], $12::jsonb[], $13::text[], $14::int[], $15::uuid[])
         WITH ORDINALITY AS c(tool_call_id, tool_name, arguments, status, deadline_ms,
                              result_card_id, seq)
)
SELECT epoch, step FROM turn`;

/**
 * Starts the deadlines of published calls ($2: JSON pairs [id, ms since acknowledged]) still
 * pending. The ids' md5s as one array: an index condition on (project_id, md5(tool_call_id)) for
 * any statistics, where a join could hash every call of the table. The ids come as JSON, not as
 * a text[]: the planner cannot see how many there are, so the cached plan serves every batch.
 * A call answered already is not written (a statement that changes no row costs no WAL flush);
 * a call parked for approval meanwhile keeps the later deadline the approval gave it.
 */
export const MARK_PUBLISHED = `UPDATE state.turn_calls c
  SET published_at = now() - make_interval(secs => a.ago / 1000),
      deadline_at = greatest(c.deadline_at,
        now() + make_interval(secs => (c.deadline_ms - a.ago) / 1000))
  FROM (SELECT x->>0 AS id, (x->>1)::float8 AS ago FROM jsonb_array_elements($2::jsonb) x) a
  WHERE c.project_id = $1
    AND md5(c.tool_call_id) = ANY (ARRAY(SELECT md5(x->>0) FROM jsonb_array_elements($2::jsonb) x))
    AND c.tool_call_id = a.id
    AND c.published_at IS NULL AND c.status = 'pending'`;

/** Ends the turn: the final card, the task's status and the thread's next message. */
export const FINISH = `SELECT ${CARD_COLUMNS}, next_task_id, next_turn_id, next_channel
  FROM state.finish_turn($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10::jsonb)`;

/** Turns with a pending call past its deadline ($1 grace ms), at most $2. */
export const PAST_DEADLINE = `SELECT DISTINCT turn_id FROM state.turn_calls
  WHERE status = 'pending' AND deadline_at < now() - make_interval(secs => $1::float8 / 1000)
  LIMIT $2`;

export const LOCK_TURN = `SELECT project_id, agent_id, channel, task_id, epoch FROM state.turns
  WHERE turn_id = $1 FOR UPDATE`;

export const CALLS_PAST_DEADLINE = `SELECT tool_call_id, tool_name, deadline_ms
  FROM state.turn_calls
  WHERE turn_id = $1 AND status = 'pending'
    AND deadline_at < now() - make_interval(secs => $2::float8 / 1000)`;

export const CALL_TIMEOUT = `UPDATE state.turn_calls SET status = 'timeout', result_card_id = $3
  WHERE project_id = $1 AND tool_call_id = $2`;

/** The turn ($1) at epoch $2 is ready once none of that epoch's calls is pending. */
export const READY_IF_ANSWERED = `UPDATE state.turns SET status = 'ready', updated_at = now()
  WHERE turn_id = $1 AND status = 'waiting' AND epoch = $2
    AND NOT EXISTS (SELECT 1 FROM state.turn_calls
                    WHERE turn_id = $1 AND epoch = $2 AND status = 'pending')
  RETURNING 1`;
