// Starting (or finding again) the call of one POST /executions request, under a tool_call_id
// the route settled on: the request's own, the one its Idempotency-Key names, or a fresh one.
// A new call is checked, recorded `queued` (with the request's fingerprint) and published. A
// known id is the same call sent again: finished, it is answered from its execution and card
// without publishing; still active, it is published again under the same Nats-Msg-Id (harmless:
// the stream drops a copy it holds, and the tool service never runs a known id twice, protocol
// 10.4), since the first publish may never have been stored. An id another request (or another
// way in) used is refused. A publish whose acknowledgement never came is answered 504
// `outcome_unknown` with the id: the call may run, and only a request sent again under that id
// is safe; a publish known not stored (no stream, refused, not permitted) is a plain 503.
import type { FastifyBaseLogger } from 'fastify';
import {
  isOutcomeUnknown,
  ResultWaitTimeoutError,
  type Client,
  type ToolCallRequest,
} from '@toolmesh/client';
import type { Config } from '@toolmesh/config';
import type { NatsConnection } from '@nats-io/transport-node';
import {
  MeshError,
  splitToolName,
  type CallContext,
  type ToolResultContent,
} from '@toolmesh/protocol';
import type { CallsStore, Execution, ExecutionStatus, RegistryStore } from '@toolmesh/store';
import { ApiError, notFound } from '../errors.ts';
import type { ArgumentsChecker } from './executions-args.ts';
import type { CallRequest } from './executions-idempotency.ts';

/** Written as the instance of a queued row; the tool service overwrites it when it starts. */
const QUEUED_BY = 'api';

export function isActive(status: ExecutionStatus): boolean {
  switch (status) {
    case 'queued':
    case 'awaiting_approval':
    case 'running':
      return true;
    case 'succeeded':
    case 'failed':
    case 'timeout':
    case 'canceled':
      return false;
    default:
      return status satisfies never;
  }
}

export interface StartRequest extends CallRequest {
  context?: CallContext | undefined;
  wait: boolean;
  /** How long to wait for the result when `wait`. */
  waitMs: number;
}

export interface Started {
  status: 200 | 202;
  /** The execution as it stands, and the result card when it is in (200). */
  execution: Execution;
  /** `stored`: finished before this request; its card is read by the caller. */
  card: { card_id: string; created_at: string; content: ToolResultContent } | 'stored' | null;
}

export interface StartDeps {
  store: CallsStore & RegistryStore;
  client: Client;
  nc: NatsConnection;
  config: Config;
  checker: ArgumentsChecker;
  log: FastifyBaseLogger;
}

/** Who asks for a call to start, and how. */
export interface StartCaller {
  keyId: string | undefined;
  signal: AbortSignal;
  /** The id was made for this request: no row can exist, so none is looked for. */
  newId: boolean;
}

export interface CallStarter {
  start(
    project: string,
    id: string,
    fingerprint: string,
    body: StartRequest,
    who: StartCaller,
  ): Promise<Started>;
}

export function createCallStarter(deps: StartDeps): CallStarter {
  const { store, client, nc, config, checker, log } = deps;
  const publishTimeoutMs = config.api.publish_ack_timeout_ms;

  /** The call's deadline: its own, else the tool's registered one (never above the limit). */
  async function deadlineOf(project: string, body: StartRequest) {
    if (body.timeout_ms !== undefined) return body.timeout_ms;
    const tool = await store.tools.get(project, body.tool);
    const registered = (tool?.options as { timeout_ms?: unknown } | undefined)?.timeout_ms;
    return typeof registered === 'number'
      ? Math.min(registered, config.tools.max_timeout_ms)
      : undefined;
  }

  /** Checks a new call's tool and arguments and records it queued; false if the id is taken. */
  async function enqueue(
    project: string,
    id: string,
    fingerprint: string,
    body: StartRequest,
    keyId: string | undefined,
  ): Promise<boolean> {
    const tool = await store.tools.get(project, body.tool);
    if (!tool) throw notFound('tool', body.tool);
    if (!tool.enabled) {
      throw new ApiError({ code: 'tool_disabled', status: 400 }, `tool ${tool.name} is disabled`);
    }
    const issues = checker.check(tool, body.arguments);
    if (issues) {
      const first = issues[0];
      throw new ApiError(
        { code: 'invalid_arguments', status: 400 },
        `invalid arguments for ${tool.name}: ${first ? `${first.path}: ${first.message}` : 'schema mismatch'}`,
        { issues },
      );
    }
    // Checked before the row is written: a closed connection would leave a queued row behind.
    if (nc.isClosed() || nc.isDraining()) {
      throw new ApiError('unavailable', 'the message bus connection is closed');
    }
    const queued = await store.executions.enqueue({
      projectId: project,
      toolCallId: id,
      channel: body.channel,
      toolName: tool.name,
      // As the tool service derives it from the subject, so the final upsert agrees.
      target: splitToolName(tool.name).target,
      instanceId: QUEUED_BY,
      context: body.context,
      keyId,
      requestFingerprint: fingerprint,
      timeoutMs: body.timeout_ms,
    });
    return queued !== undefined;
  }

  /** A publish that failed: unknown outcome (504, the row stays) or not stored (503). */
  async function publishFailed(project: string, id: string, fresh: boolean, err: unknown) {
    if (err instanceof ApiError) throw err;
    if (isOutcomeUnknown(err)) {
      // The call may be in the stream: its queued row stays, so the id is found when sent again.
      log.warn({ err, tool_call_id: id }, 'a tool call was sent but not acknowledged');
      throw new ApiError(
        'outcome_unknown',
        `the call ${id} was sent but the message bus did not acknowledge it within ${publishTimeoutMs} ms: it may run. Send the same request again with "tool_call_id": "${id}" (or the same Idempotency-Key): it is answered from this call and never runs twice. Do not retry under a new id.`,
        { tool_call_id: id },
      );
    }
    // Known not stored: nothing will run a row this request queued. One queued by an earlier
    // request stays, since that request's publish may have been stored.
    if (fresh) await store.executions.dropQueued(project, id);
    if (err instanceof MeshError && err.code !== 'unavailable') throw err;
    log.warn({ err, tool_call_id: id }, 'publishing a tool call failed');
    throw new ApiError('unavailable', 'the message bus is unavailable; retry later', {
      tool_call_id: id,
    });
  }

  async function start(
    project: string,
    id: string,
    fingerprint: string,
    body: StartRequest,
    who: StartCaller,
  ): Promise<Started> {
    let fresh = false;
    for (let round = 0; ; round++) {
      // Each round meets a race (a concurrent request with the same id); a few settle any.
      if (round === 3) {
        throw new ApiError(
          'conflict',
          `tool_call_id ${id} is being started by another request at this moment; send it again`,
        );
      }
      const known =
        who.newId && round === 0
          ? undefined
          : await store.executions.requestFingerprint(project, id);
      if (known === undefined) {
        fresh = await enqueue(project, id, fingerprint, body, who.keyId);
        if (fresh) break;
        continue; // another request recorded the id meanwhile: it is a known id now
      }
      if (known !== fingerprint) {
        throw new ApiError(
          'tool_call_id_reused',
          `tool_call_id ${id} already names another call (other arguments, tool, channel, deadline, context or API key); use a new id for a new call`,
        );
      }
      const e = await store.executions.get(project, id);
      if (!e) continue; // dropped meanwhile (its publish failed): start it afresh
      if (!isActive(e.status)) return { status: 200, execution: e, card: 'stored' };
      if (nc.isClosed() || nc.isDraining()) {
        throw new ApiError('unavailable', 'the message bus connection is closed');
      }
      break;
    }

    const deadline = await deadlineOf(project, body);
    const call: ToolCallRequest = {
      project,
      channel: body.channel,
      tool: body.tool,
      arguments: body.arguments,
      toolCallId: id,
      ...(deadline !== undefined ? { timeoutMs: deadline } : {}),
      ...(body.context !== undefined ? { context: body.context } : {}),
    };
    const current = async () => {
      const e = await store.executions.get(project, id);
      if (!e) throw new Error(`execution ${id} vanished while it was being started`);
      return e;
    };

    if (!body.wait) {
      await client
        .publishToolCall(call, { publishTimeoutMs })
        .catch((err: unknown) => publishFailed(project, id, fresh, err));
      return { status: 202, execution: await current(), card: null };
    }
    const result = await client
      .callTool(call, { waitMs: body.waitMs, signal: who.signal, publishTimeoutMs })
      .catch((err: unknown) => {
        if (err instanceof ResultWaitTimeoutError || who.signal.aborted) return undefined;
        return publishFailed(project, id, fresh, err);
      });
    const e = await current();
    if (!result) return { status: 202, execution: e, card: null };
    // The card is written before its event is published, so the row is already final; the
    // card comes from the event and costs no read.
    return {
      status: 200,
      execution: e,
      card: { card_id: result.card_id, created_at: result.created_at, content: result.content },
    };
  }

  return { start };
}
