// The agent turn, as a state machine over state.turns.status; each move is one statement, named
// here as the store runs it (its SQL, in this order: packages/store/src/agents/turn-statements.ts,
// which names the migration of each plpgsql function), and this module runs one step of it:
//
//   (task pending) --inbox applied--> ready      APPLY_INBOX: state.apply_inbox_task starts the
//                                                task's turn, or its thread's oldest message
//   ready | running with a lapsed lease
//                  --claim-->          running    WAKE (state.wake_step: inbox, claim and step
//                                                context in one statement) or CLAIM (the scan);
//                                                a new run token fences every later write
//   running        --commit-->         waiting    COMMIT_STEP: the answer's cards and calls,
//                                                epoch + 1 (ready when every call was answered here)
//   running        --finish-->         succeeded | failed   FINISH (state.finish_turn): the final
//                                                card, the task's status, the thread's next message
//   waiting        --last result-->    ready      state.apply_result, in the statement that writes
//                                                the result card (the tool's, not this worker's),
//                                                or a deadline fired (the scan)
//   unfinished     --cancel-->         canceled   the api (store task-cancel.ts)
//
// A model step makes two durable writes on its path: the claim and the commit (or finish). A
// tool's result answers the turn in the commit that writes its card (the tool service's one write
// per call), so the claim finds the turn ready rather than an inbox row to apply first; the start
// of the calls' deadlines is written off the path (published-marks.ts).
//
// One step: rebuild what the model is shown from Postgres, ask the model, then either finish the
// turn (submit_result, a plain answer, a model error, the step limit) or record the calls it made
// and suspend until their results arrive. Nothing of the turn stays in memory between steps, and
// every write is fenced by the step's lease: a step whose lease was taken over stops without
// writing.
import type { Logger } from 'pino';
import { v7 as uuidv7 } from 'uuid';
import type { AgentConfig, LlmConfig } from '@toolmesh/config';
import { isTerminalError } from '@toolmesh/bus';
import type { ErrorBody } from '@toolmesh/protocol';
import type { AgentsStore, ClaimedTurn, SkillsStore, StepContext } from '@toolmesh/store';
import { ModelError, type Llm, type ModelAnswer } from '../llm.ts';
import { withThreadHistory } from '../history.ts';
import { buildMessages, systemPrompt } from '../prompt.ts';
import type { Publisher } from '../publish.ts';
import type { PublishedMarks } from './published-marks.ts';
import { deferredSubmit, submittedResult } from '../submit.ts';
import { SUBMIT_RESULT, buildToolset } from '../toolset.ts';
import { planCalls } from './calls.ts';

export interface StepDeps {
  /** The turn's rows (agents) and, for a profile with skills, the project's skills. */
  store: AgentsStore & SkillsStore;
  llm: Llm;
  publish: Publisher;
  /** Where the step leaves its acknowledged calls, whose deadlines start from then. */
  published: PublishedMarks;
  agent: AgentConfig;
  llmConfig: LlmConfig;
  instanceId: string;
  logger: Logger;
}

/** Chunks of one step are numbered in a block of their own, so seq orders a turn's chunks. */
const SEQ_PER_STEP = 1_000_000;

/**
 * Runs one step; true when it left a turn of the agent due: this one (every call answered by the
 * worker), or, as this turn ended, its thread's next message.
 */
export async function runStep(
  deps: StepDeps,
  turn: ClaimedTurn,
  /** Read with the claim (a wakeup's); read here when absent (the scan's). */
  context?: StepContext,
): Promise<boolean> {
  const { store, publish } = deps;
  const step = turn.step + 1;
  const log = deps.logger.child({
    project_id: turn.project_id,
    agent_id: turn.agent_id,
    turn_id: turn.turn_id,
    task_id: turn.task_id,
    step,
  });
  const abort = new AbortController();
  // The lease is renewed while the model thinks; losing it (another instance took the turn
  // over after this one stalled) aborts the request and fences every later write.
  const renewEvery = Math.max(250, Math.floor(deps.agent.lease_ttl_ms / 3));
  const heartbeat = setInterval(() => {
    store.turns.renew(turn.turn_id, turn.run_token, deps.agent.lease_ttl_ms).then(
      (held) => {
        if (!held) abort.abort(new Error('lease lost'));
      },
      (err: unknown) => log.warn({ err }, 'renewing the turn lease failed'),
    );
  }, renewEvery);

  const finish = async (
    status: 'succeeded' | 'failed',
    content: Record<string, unknown>,
    error?: ErrorBody,
  ): Promise<boolean> => {
    const done = await store.turns.finish(turn, {
      status,
      content: { status, ...content, ...(error ? { error } : {}) },
      error,
      author: `agent:${turn.agent_id}`,
    });
    if (!done) {
      log.warn('lease lost before the turn could finish; left to its new owner');
      return false;
    }
    const { card, next } = done;
    log.info({ status, card_id: card.card_id, code: error?.code }, 'turn finished');
    await Promise.all([
      publish.task(turn, turn.task_id, status, {
        card_id: card.card_id,
        ...(error ? { error } : {}),
      }),
      publish.state(turn, 'idle'),
    ]);
    // The thread's next message started with this turn's end (announced after it, so a watcher
    // sees the order the thread ran in). Its own wakeup was spent while this turn ran, so this
    // runner claims it next rather than leave it to the scan.
    if (!next) return false;
    await publish.task({ ...turn, channel: next.channel }, next.taskId, 'running');
    return true;
  };

  try {
    if (turn.claims > deps.agent.max_step_attempts) {
      const message = `step ${step} failed or was abandoned ${turn.claims - 1} times in a row; see the agent worker logs`;
      return await finish('failed', { text: message }, { code: 'internal_error', message });
    }
    // What the step reads, in one statement (the project's tools too: an agent without a
    // profile, which needs none of them, is rare).
    const ctx = context ?? (await store.turns.stepContext(turn));
    const { profile, registry, attached, conversation: conv } = ctx;
    const tools = buildToolset(
      profile,
      profile ? registry : [],
      attached ?? [],
      deps.agent.prompt_tools_max,
    );
    // The last answer submitted its result beside other calls: those have their results now.
    const deferred = deferredSubmit(conv);
    if (deferred) return await finish('succeeded', { ...deferred });
    if (turn.step >= deps.agent.max_steps_per_turn) {
      const message = `the turn used all ${deps.agent.max_steps_per_turn} steps without a final answer`;
      return await finish('failed', { text: message }, { code: 'step_limit', message });
    }
    const skills = tools.skills ? await store.skills.list(turn.project_id) : undefined;
    const messages = await withThreadHistory(
      store,
      turn,
      deps.agent,
      buildMessages(
        systemPrompt(profile?.system_prompt ?? '', skills),
        conv,
        deps.agent.tool_result_max_chars,
      ),
      ctx,
    );
    // Sent while the model is asked; a failure to publish it still fails the step, after.
    const thinking = publish.state(turn, 'thinking');
    thinking.catch(() => undefined);
    let seq = step * SEQ_PER_STEP;
    let answer: ModelAnswer;
    try {
      answer = await deps.llm.ask(
        {
          model: profile?.model ?? deps.llmConfig.model,
          messages,
          tools: tools.specs,
          signal: abort.signal,
          onDelta: (d) => publish.chunk(turn, seq++, d),
        },
        log,
      );
    } catch (err) {
      if (abort.signal.aborted) {
        log.warn('lease lost while the model was asked; step dropped');
        return false;
      }
      if (!(err instanceof ModelError)) throw err;
      log.warn({ err: err.message, status: err.status }, 'model failed; the turn ends');
      return await finish(
        'failed',
        { text: err.message },
        { code: 'model_error', message: err.message },
      );
    }
    await thinking;

    const submit = answer.calls.find((c) => c.name === SUBMIT_RESULT && tools.internal.has(c.name));
    const others = answer.calls.filter((c) => c !== submit);
    if (submit && others.length === 0) {
      // Arguments that are not a JSON object still carry the model's answer: keep them as text.
      return await finish('succeeded', {
        result: submittedResult(submit.arguments),
        text: answer.text,
      });
    }
    if (answer.calls.length === 0) {
      return await finish('succeeded', { result: answer.text, text: answer.text });
    }

    // A submit_result beside other calls waits for them (submit.ts): it is kept in the answer's
    // record, and the step after their results finishes the turn with it.
    const calls = planCalls(others, tools, deps.agent.tool_deadline_ms, profile?.name ?? null);
    const committed = await store.turns.commitStep(turn, {
      assistant: {
        role: 'assistant',
        content: answer.text || null,
        tool_calls: [
          ...calls.map((c) => ({ id: c.toolCallId, name: c.fn, arguments: c.said })),
          ...(submit ? [{ id: uuidv7(), name: SUBMIT_RESULT, arguments: submit.arguments }] : []),
        ],
      },
      calls,
      author: `agent:${turn.agent_id}`,
    });
    if (!committed) {
      log.warn('lease lost before the step was recorded; step dropped');
      return false;
    }
    const outgoing = calls.filter((c) => !c.answer);
    // The calls, the step event and the state go out together (one socket write); the calls'
    // deadlines start once every call is acknowledged (written a moment later, off the step's
    // path: published-marks.ts).
    await Promise.all([
      Promise.all(
        outgoing.map((c) =>
          publish.toolCall(turn, committed.epoch, {
            toolCallId: c.toolCallId,
            toolName: c.toolName,
            arguments: c.arguments,
            timeoutMs: c.timeoutMs,
          }),
        ),
      ).then(() =>
        deps.published.mark(
          turn.project_id,
          outgoing.map((c) => c.toolCallId),
        ),
      ),
      publish.step(
        turn,
        committed.epoch,
        committed.step,
        calls.map((c) => c.toolCallId),
      ),
      outgoing.length ? publish.state(turn, 'waiting') : undefined,
    ]);
    log.info(
      {
        epoch: committed.epoch,
        calls: outgoing.map((c) => c.toolName),
        answered: calls.filter((c) => c.answer).map((c) => c.toolName),
      },
      outgoing.length ? 'turn suspended on tool calls' : 'every call answered here; next step due',
    );
    // Every call was answered here: the turn is ready again and this runner takes it next.
    return outgoing.length === 0;
  } catch (err) {
    // A stack overflow on a deeply nested value (a tool result, the model's arguments) or
    // another error no retry cures would fail every claim of the turn, each a lease apart: the
    // turn ends now with the reason instead.
    if (!isTerminalError(err) || abort.signal.aborted) throw err;
    const message = `step ${step} cannot be run: ${(err as Error).message}`.slice(0, 2_000);
    log.error({ err }, 'step failed in a way no retry can cure; the turn ends');
    return await finish('failed', { text: message }, { code: 'internal_error', message });
  } finally {
    clearInterval(heartbeat);
  }
}
