// Answering an input request (what an MCP server asked during a call that no MCP client could
// answer: docs/mcp.md, "Sampling and elicitation"), wherever the answer comes from: the HTTP
// route, or a 2026-07-28 client's tasks/update of the task the call is. Accepted content must
// match the requested form; the first answer stands (one conditional UPDATE); the tools service
// running the call is told on the bus (lossy: it also reads the row every few seconds).
import type { NatsConnection } from '@nats-io/transport-node';
import type { Logger } from 'pino';
import type { Client } from '@toolmesh/client';
import { encodeMessage } from '@toolmesh/protocol';
import { createProjectValidators, SchemaCompileError } from '@toolmesh/json-schema';
import type { InputAction, InputRequestRecord, Store } from '@toolmesh/store';
import { ApiError } from './errors.ts';

export interface InputAnswers {
  /**
   * Checks and records an answer (ApiError invalid_input when it does not fit the form);
   * `answered` false when the request was not pending any more (the record says what it is).
   */
  answer(
    project: string,
    r: InputRequestRecord,
    a: { action: InputAction; content?: Record<string, unknown> | undefined },
    by: string,
  ): Promise<{ answered: boolean; record: InputRequestRecord } | undefined>;
}

export function createInputAnswers(deps: {
  store: Store;
  nc: NatsConnection;
  client: Client;
  logger: Logger;
}): InputAnswers {
  const { store, nc, client } = deps;
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

  return {
    async answer(project, r, { action, content }, by) {
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
    },
  };
}
