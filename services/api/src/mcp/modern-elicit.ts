// An MCP server that speaks only the 2025 revisions asks a question (elicitation/create, form)
// during a call made by a 2026-07-28 client. That client has no stream for a server-to-client
// request, so the question waits as a durable input request (services/tools/src/mcp/ask.ts:
// the tools service keeps the server's request open meanwhile), and the client is answered
// `input_required` with the input request as its elicitation, keyed by the input request id,
// and a requestState sealed by the mesh (modern-input.ts) naming the call and the request. The
// client re-sends its tools/call with the answer in `inputResponses` and the state echoed: any
// api instance answers the input request as the HTTP route does (input-answers.ts: the form is
// checked, the first answer stands), and waits for the same call without publishing anything:
// its card, or the server's next question (another input_required round).
//
// Why this and not the server's own revision: the server holds its request open and expects an
// answer on the same session; only the mesh can hold that request while a stateless client goes
// away and comes back, and the durable input request is already how the mesh does it for any
// caller (the API, the CLI, the console may answer it too; the call's deadline bounds the wait).
// Sampling has no durable form and stays refused (or answered by [llm]) as for any caller.
import {
  ProtocolError,
  ProtocolErrorCode,
  type InputRequest,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { CallToolResult } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@toolmesh/client';
import { subscribeGuarded } from '@toolmesh/bus';
import type { NatsConnection } from '@nats-io/transport-node';
import { decodeMessage } from '@toolmesh/protocol';
import type { CallsStore, InputRequestRecord, RegistryStore, ToolRecord } from '@toolmesh/store';
import type { Logger } from 'pino';
import { z } from 'zod';
import { ApiError } from '../errors.ts';
import type { InputAnswers } from '../input-answers.ts';
import { errorResult } from './call-results.ts';
import { MCP_CHANNEL, type MeshCalls } from './calls.ts';
import type { InputBinding, InputStates, WaitingInput } from './modern-input.ts';

export interface ElicitDeps {
  store: CallsStore & RegistryStore;
  calls: MeshCalls;
  client: Client;
  nc: NatsConnection;
  inputStates: InputStates;
  answers: InputAnswers;
  logger: Logger;
}

/** The input_required answer carrying a pending input request of the call. */
function inputRequired(
  states: InputStates,
  binding: InputBinding,
  r: InputRequestRecord,
): InputRequiredResult {
  return {
    resultType: 'input_required',
    inputRequests: {
      [r.input_request_id]: {
        method: 'elicitation/create',
        params: { mode: 'form', message: r.message, requestedSchema: r.requested_schema },
      } as unknown as InputRequest,
    },
    requestState: states.seal(binding, undefined, {
      toolCallId: r.tool_call_id,
      inputRequestId: r.input_request_id,
    }),
  };
}

const invalid = (why: string, code = 'invalid_request_state') =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, why, { code });

const Answer = z.looseObject({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.unknown()).optional(),
});

/**
 * Waits for the call: its card, or a new question of its server (then input_required again). A
 * question already answered (by the API, say) is waited past.
 */
async function follow(
  deps: ElicitDeps,
  binding: InputBinding,
  tool: ToolRecord,
  toolCallId: string,
  signal: AbortSignal,
  /** Subscribed before anything was answered, so no question of the call is missed. */
  next: NextQuestion,
): Promise<CallToolResult | InputRequiredResult> {
  const { project } = binding;
  for (;;) {
    const stop = new AbortController();
    const following = deps.calls
      .follow(project, tool, toolCallId, 0, AbortSignal.any([signal, stop.signal]))
      .then(
        (done) => ({ done }),
        (err: unknown) => ({ err }),
      );
    const outcome = await Promise.race([following, next.asked.then((id) => ({ id }))]);
    if ('id' in outcome) {
      stop.abort();
      await following;
      next.rearm(outcome.id);
      const r = await deps.store.inputRequests.get(project, outcome.id);
      if (r?.status === 'pending') return inputRequired(deps.inputStates, binding, r);
      continue;
    }
    if ('err' in outcome) throw outcome.err;
    return (
      outcome.done ??
      errorResult(
        'timeout',
        `no result for ${toolCallId} in time; read it with GET /executions/${toolCallId}`,
        { tool_call_id: toolCallId },
      )
    );
  }
}

interface NextQuestion {
  /** Settles with the id of the next input request of the call not yet seen. */
  asked: Promise<string>;
  /** Marks `id` seen and waits for the one after it. */
  rearm(id: string): void;
  stop(): void;
}

/** The call's progress events saying it waits for a new input request. */
async function watchQuestions(
  deps: ElicitDeps,
  project: string,
  tool: ToolRecord,
  toolCallId: string,
  seen: string,
): Promise<NextQuestion> {
  const known = new Set([seen]);
  const queue: string[] = [];
  let wake: ((id: string) => void) | undefined;
  const arm = () =>
    new Promise<string>((resolve) => {
      const first = queue.shift();
      if (first !== undefined) resolve(first);
      else wake = resolve;
    });
  const sub = subscribeGuarded(
    deps.nc,
    deps.client.subjects.toolProgress({ project, channel: MCP_CHANNEL, target: tool.target }),
    {
      log: deps.logger.child({ project, tool_call_id: toolCallId }),
      onMessage: (msg) => {
        try {
          const ev = decodeMessage('tool_progress', msg.data);
          const id = ev.detail?.['input_request_id'];
          if (ev.tool_call_id !== toolCallId || ev.detail?.['status'] !== 'awaiting_input') return;
          if (typeof id !== 'string' || known.has(id)) return;
          known.add(id);
          if (wake) {
            const w = wake;
            wake = undefined;
            w(id);
          } else queue.push(id);
        } catch {
          // Another sender's malformed event.
        }
      },
    },
  );
  // Subscribed before the answer goes out: the server's next question is seen either way.
  await deps.nc.flush();
  const next: NextQuestion = {
    asked: arm(),
    rearm: () => {
      next.asked = arm();
    },
    stop: () => sub.unsubscribe(),
  };
  return next;
}

/** A call that stopped to wait for an input request: input_required while it is pending. */
export async function waitingAnswer(
  deps: ElicitDeps,
  binding: InputBinding,
  parked: WaitingInput & { tool: ToolRecord },
  signal: AbortSignal,
): Promise<CallToolResult | InputRequiredResult> {
  const next = await watchQuestions(
    deps,
    binding.project,
    parked.tool,
    parked.toolCallId,
    parked.inputRequestId,
  );
  try {
    const r = await deps.store.inputRequests.get(binding.project, parked.inputRequestId);
    if (r?.status === 'pending') return inputRequired(deps.inputStates, binding, r);
    // Answered (or over) while the request was being answered: wait for the call as usual.
    return await follow(deps, binding, parked.tool, parked.toolCallId, signal, next);
  } finally {
    next.stop();
  }
}

/**
 * A re-sent tools/call whose sealed state names a waiting input request: answers it with the
 * client's response and waits for the call (or asks again while it is unanswered).
 */
export async function resumeWaiting(
  deps: ElicitDeps,
  binding: InputBinding,
  waiting: WaitingInput,
  inputResponses: Record<string, unknown> | undefined,
  caller: string,
  signal: AbortSignal,
): Promise<CallToolResult | InputRequiredResult> {
  const { project } = binding;
  const r = await deps.store.inputRequests.get(project, waiting.inputRequestId);
  if (!r || r.tool_call_id !== waiting.toolCallId) {
    throw invalid('invalid requestState: it names no input request of this project');
  }
  const tool = await deps.store.tools.get(project, r.tool_name);
  if (!tool) throw invalid(`invalid requestState: ${r.tool_name} is no longer registered`);
  const next = await watchQuestions(deps, project, tool, r.tool_call_id, r.input_request_id);
  try {
    const response = inputResponses?.[r.input_request_id];
    if (response === undefined) {
      if (r.status === 'pending') return inputRequired(deps.inputStates, binding, r);
    } else {
      const answer = Answer.safeParse(response);
      if (!answer.success) {
        throw invalid(
          `inputResponses["${r.input_request_id}"] must be an elicitation result (action accept, decline or cancel)`,
          'invalid_input_response',
        );
      }
      const { action, content } = answer.data;
      try {
        await deps.answers.answer(project, r.input_request_id, { action, content }, caller);
      } catch (err) {
        if (!(err instanceof ApiError)) throw err;
        // The client's answer does not fit (or came too late): said as the route says it.
        throw invalid(`${err.code}: ${err.message}`, err.code);
      }
    }
    return await follow(deps, binding, tool, r.tool_call_id, signal, next);
  } finally {
    next.stop();
  }
}
