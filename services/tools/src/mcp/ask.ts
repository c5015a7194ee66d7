// What an MCP server asks its client during a call (sampling/createMessage, elicitation/create).
// First the api instance waiting for the call is asked (`ctl.ask.<tool_call_id>.request`): it
// asks the MCP client that made the call. When nobody can answer (no api waits: a call over the
// bus, the SDK, the HTTP API, an agent, a task; or its client lacks the capability):
// - an elicitation becomes an input request (state.input_requests) that any api instance
//   answers later (HTTP API, CLI, console); the server's request stays open meanwhile, and an
//   unanswered one expires a little before the call's deadline: the call fails input_expired;
// - a sampling request is answered by [llm] when the project's tools.mcp_sampling_llm (else
//   [tools] mcp_sampling_llm) is on, and refused otherwise.
import type { Logger } from 'pino';
import type { Bus } from '@toolmesh/bus';
import {
  decodeMessage,
  encodeMessage,
  MCP_ASK_NO_CLIENT,
  ToolError,
  type McpAskMethod,
} from '@toolmesh/protocol';
import type { CallsStore, InputRequestRecord, RegistryStore } from '@toolmesh/store';
import type { AttemptContext } from '../kinds/kind.ts';
import type { Sampler } from './sampling.ts';

/** A JSON-RPC error for the server: the SDK answers a thrown error with its code and data. */
export class AskRefused extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'AskRefused';
    this.code = code;
    this.data = data;
  }
}
const INTERNAL_ERROR = -32603;
const INVALID_PARAMS = -32602;

/**
 * An input request expires this long before the call's deadline, so the call can still file its
 * own failure (input_expired) instead of a bare timeout.
 */
export const INPUT_EXPIRY_MARGIN_MS = 1_000;
/** How often a waiting input request is read again, beside the answered notice (lossy). */
const INPUT_POLL_MS = 2_000;

export interface AskDeps {
  bus: Bus;
  /** The project's settings (registry) and its input requests (calls). */
  store: CallsStore & RegistryStore;
  /** Answers sampling with [llm]; whether it may is the project's setting. */
  sampler: Sampler;
  /** [tools] mcp_sampling_llm: the default of projects without their own setting. */
  samplingLlm: boolean;
  logger: Logger;
}

/** One call's asks: what the mesh answered, so the call can say why it failed. */
export interface CallAsks {
  ask(method: McpAskMethod, params: Record<string, unknown>): Promise<Record<string, unknown>>;
  /** Aborted when an input request of the call expired: the server's call is given up. */
  readonly expired: AbortSignal;
}

const isNoResponders = (err: unknown) =>
  typeof (err as { isNoResponders?: unknown }).isNoResponders === 'function' &&
  (err as { isNoResponders: () => boolean }).isNoResponders();

export function createCallAsks(
  deps: AskDeps,
  ctx: AttemptContext,
  call: { server: string },
): CallAsks {
  const expiry = new AbortController();
  const log = deps.logger.child({
    component: 'mcp-ask',
    project: ctx.project,
    tool_call_id: ctx.toolCallId,
  });

  /** The api waiting for the call asks its client; undefined: nobody there can answer. */
  async function askWaitingClient(
    method: McpAskMethod,
    params: Record<string, unknown>,
  ): Promise<{ result: Record<string, unknown> } | { noClient: string }> {
    const subject = deps.bus.subjects.mcpAsk({
      project: ctx.project,
      channel: ctx.channel,
      toolCallId: ctx.toolCallId,
    });
    let reply;
    try {
      const msg = await deps.bus.nc.request(
        subject,
        encodeMessage('mcp_ask', { v: 1, method, params }),
        { timeout: Math.max(1_000, ctx.deadline - Date.now()) },
      );
      reply = decodeMessage('mcp_rpc_reply', msg.data);
    } catch (err) {
      if (isNoResponders(err)) {
        // The api listens only for a client that declared sampling or elicitation: one that
        // declared neither is not listening either.
        const capability = method === 'sampling/createMessage' ? 'sampling' : 'elicitation';
        return {
          noClient: `no MCP client is waiting for this call (a call over the bus, a client that did not declare ${capability}, or one that has gone)`,
        };
      }
      throw new AskRefused(
        INTERNAL_ERROR,
        (err as Error).name === 'TimeoutError'
          ? `${method}: the caller did not answer before the call's deadline`
          : `${method}: the caller could not be asked: ${(err as Error).message}`,
      );
    }
    if (reply.error) {
      const data = reply.error.data as { reason?: unknown } | undefined;
      if (data?.reason === MCP_ASK_NO_CLIENT) return { noClient: reply.error.message };
      throw new AskRefused(reply.error.code, reply.error.message, reply.error.data);
    }
    return { result: reply.result ?? {} };
  }

  async function sample(
    params: Record<string, unknown>,
    why: string,
  ): Promise<Record<string, unknown>> {
    const settings = await deps.store.projects.settings(ctx.project);
    const allowed = settings?.tools?.mcp_sampling_llm ?? deps.samplingLlm;
    if (!allowed) {
      throw new AskRefused(
        INTERNAL_ERROR,
        `sampling_unavailable: ${why}; the mesh answers sampling/createMessage itself only when the project's tools.mcp_sampling_llm (or [tools] mcp_sampling_llm) is on`,
        { code: 'sampling_unavailable' },
      );
    }
    ctx.progress({ status: 'sampling', answered_by: 'llm' });
    try {
      return await deps.sampler.createMessage(params, ctx.signal);
    } catch (err) {
      const raw = (err as { code?: unknown }).code;
      const code = typeof raw === 'string' ? raw : 'model_error';
      log.warn({ err }, 'sampling with [llm] failed');
      throw new AskRefused(
        code === 'invalid_sampling' ? INVALID_PARAMS : INTERNAL_ERROR,
        `${code}: ${(err as Error).message}`,
        { code },
      );
    }
  }

  /** Files the elicitation as an input request and waits for its answer, or its expiry. */
  async function inputRequest(params: Record<string, unknown>): Promise<Record<string, unknown>> {
    const schema = params['requestedSchema'];
    if (params['mode'] === 'url' || typeof schema !== 'object' || schema === null) {
      throw new AskRefused(
        INVALID_PARAMS,
        'elicitation/create: only form elicitation (a requestedSchema) can wait for an answer over the mesh',
      );
    }
    const expiresAt = new Date(ctx.deadline - INPUT_EXPIRY_MARGIN_MS);
    const req = await deps.store.inputRequests.create({
      projectId: ctx.project,
      toolCallId: ctx.toolCallId,
      channel: ctx.channel,
      toolName: ctx.toolName,
      server: call.server,
      message: typeof params['message'] === 'string' ? params['message'] : '',
      requestedSchema: schema as Record<string, unknown>,
      expiresAt,
    });
    const id = req.input_request_id;
    log.info({ input_request_id: id }, 'an MCP server asks for input nobody is here to give');
    ctx.progress({
      status: 'awaiting_input',
      input_request_id: id,
      expires_at: expiresAt.toISOString(),
    });
    const answered = await waitForAnswer(id, expiresAt);
    if (answered.status === 'answered') {
      log.info({ input_request_id: id, action: answered.action }, 'input request answered');
      ctx.progress({ status: 'input_answered', input_request_id: id });
      return {
        action: answered.action,
        ...(answered.action === 'accept' && answered.content ? { content: answered.content } : {}),
      };
    }
    if (answered.status === 'expired') {
      expiry.abort(
        new ToolError(
          `nobody answered input request ${id} of the MCP server ${call.server} before the call's deadline`,
          {
            code: 'input_expired',
            details: { input_request_id: id, expires_at: expiresAt.toISOString() },
          },
        ),
      );
    }
    throw new AskRefused(
      INTERNAL_ERROR,
      `elicitation/create: input request ${id} ${answered.status}`,
    );
  }

  async function waitForAnswer(id: string, expiresAt: Date): Promise<InputRequestRecord> {
    const subject = deps.bus.subjects.inputAnswered({
      project: ctx.project,
      channel: ctx.channel,
      inputRequestId: id,
    });
    let wake: (() => void) | undefined;
    const sub = deps.bus.nc.subscribe(subject, { callback: () => wake?.() });
    try {
      for (;;) {
        const row = await deps.store.inputRequests.get(ctx.project, id);
        if (row && row.status !== 'pending') {
          if (row.status === 'expired')
            return (await deps.store.inputRequests.end(ctx.project, id, 'expired')) ?? row;
          return row;
        }
        const left = expiresAt.getTime() - Date.now();
        if (ctx.signal.aborted) {
          // Canceled (or past the deadline): the request can no longer be answered.
          return (await deps.store.inputRequests.end(ctx.project, id, 'closed')) ?? row!;
        }
        await new Promise<void>((resolve) => {
          const done = () => {
            clearTimeout(timer);
            ctx.signal.removeEventListener('abort', done);
            wake = undefined;
            resolve();
          };
          const timer = setTimeout(done, Math.max(0, Math.min(INPUT_POLL_MS, left)));
          wake = done;
          ctx.signal.addEventListener('abort', done, { once: true });
        });
      }
    } finally {
      sub.unsubscribe();
    }
  }

  return {
    expired: expiry.signal,
    async ask(method, params) {
      const asked = await askWaitingClient(method, params);
      if ('result' in asked) return asked.result;
      switch (method) {
        case 'sampling/createMessage':
          return sample(params, asked.noClient);
        case 'elicitation/create':
          return inputRequest(params);
        default: {
          const never: never = method;
          throw new AskRefused(INTERNAL_ERROR, `unknown ask ${String(never)}`);
        }
      }
    },
  };
}
