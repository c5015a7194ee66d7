// Answering an input request (docs/mcp.md, "Sampling and elicitation"), wherever the answer
// comes from: the HTTP route, a 2026-07-28 MCP client re-sending its request with
// `inputResponses` (mcp/modern-elicit.ts), or its tasks/update of the task the call is
// (mcp/modern-tasks.ts). Accepted content must match the server's requested form; the first
// answer stands (one conditional UPDATE), a repeat of it answers the same and another is a
// conflict; the tools service running the call is told on the bus (lossy: it also reads the row
// every few seconds).
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Client } from '@toolmesh/client';
import { createProjectValidators, SchemaCompileError } from '@toolmesh/json-schema';
import { encodeMessage } from '@toolmesh/protocol';
import type { CallsStore, InputAction, InputRequestRecord } from '@toolmesh/store';
import { ApiError, notFound } from './errors.ts';

export interface InputAnswerIn {
  action: InputAction;
  content?: Record<string, unknown> | undefined;
}

export interface InputAnswers {
  /**
   * Answers a request; throws ApiError `invalid_input` (content and form disagree), `conflict`
   * (another answer came first, or the call no longer waits), `input_expired`, or not found.
   */
  answer(project: string, id: string, a: InputAnswerIn, by: string): Promise<InputRequestRecord>;
  /**
   * Checks and records an answer to a request already in hand (ApiError invalid_input when it
   * does not fit the form); `answered` false when the request was not pending any more (the
   * record says what it is), undefined when it is gone.
   */
  record(
    project: string,
    r: InputRequestRecord,
    a: InputAnswerIn,
    by: string,
  ): Promise<{ answered: boolean; record: InputRequestRecord } | undefined>;
}

const sameAnswer = (r: InputRequestRecord, action: InputAction, content: unknown) =>
  r.status === 'answered' &&
  r.action === action &&
  JSON.stringify(r.content ?? null) === JSON.stringify(content ?? null);

export function createInputAnswers(deps: {
  store: CallsStore;
  nc: NatsConnection;
  client: Client;
  logger: Logger;
  /** How a record is shown in an error's details (the route's own shape). */
  show: (r: InputRequestRecord) => unknown;
}): InputAnswers {
  const { store, nc, client, show } = deps;
  const log = deps.logger.child({ component: 'input-requests' });
  // The form of a request never changes: one validator per request id, per project.
  const validators = createProjectValidators({ maxPerProject: 200 });

  function checkContent(project: string, r: InputRequestRecord, content: unknown) {
    let validate;
    try {
      validate = validators.get(project, r.input_request_id, r.requested_schema);
    } catch (err) {
      if (!(err instanceof SchemaCompileError)) throw err;
      throw new ApiError(
        'invalid_input',
        `the MCP server's requested form does not compile (${err.message}): only decline or cancel can answer it`,
      );
    }
    if (!validate(content)) {
      const issues = (validate.errors ?? []).map((e) => ({
        path: e.instancePath || '/',
        message: e.message ?? 'invalid',
      }));
      throw new ApiError(
        'invalid_input',
        `content${issues[0]?.path === '/' ? '' : (issues[0]?.path ?? '')}: ${issues[0]?.message ?? 'invalid'}`,
        { issues },
      );
    }
  }

  async function record(
    project: string,
    r: InputRequestRecord,
    { action, content }: InputAnswerIn,
    by: string,
  ): Promise<{ answered: boolean; record: InputRequestRecord } | undefined> {
    if (action === 'accept') {
      if (!content) {
        throw new ApiError('invalid_input', 'accept needs content matching the requested form');
      }
      checkContent(project, r, content);
    } else if (content !== undefined) {
      throw new ApiError('invalid_input', `${action} carries no content`);
    }
    const id = r.input_request_id;
    const out = await store.inputRequests.answer(project, id, { action, content, by });
    if (out?.answered) {
      log.info(
        { project, input_request_id: id, tool_call_id: r.tool_call_id, action },
        'input request answered',
      );
      nc.publish(
        client.subjects.inputAnswered({ project, channel: r.channel, inputRequestId: id }),
        encodeMessage('mcp_input_answered', { v: 1 }),
      );
    }
    return out;
  }

  return {
    record,
    async answer(project, id, a, by) {
      const current = await store.inputRequests.get(project, id);
      if (!current) throw notFound('input request', id);
      const out = await record(project, current, a, by);
      if (!out) throw notFound('input request', id);
      const r = out.record;
      if (out.answered || sameAnswer(r, a.action, a.content)) return r;
      if (r.status === 'expired') {
        throw new ApiError(
          'input_expired',
          `input request ${id} expired at ${r.expires_at.toISOString()}`,
          { input_request: show(r) },
        );
      }
      throw new ApiError(
        'conflict',
        r.status === 'answered'
          ? `input request ${id} was already answered: ${r.action ?? ''} by ${r.answered_by ?? 'unknown'}`
          : `input request ${id} is ${r.status}: its call no longer waits for it`,
        { input_request: show(r) },
      );
    },
  };
}
