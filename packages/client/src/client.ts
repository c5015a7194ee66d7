// The TypeScript SDK: publish a tool call onto the mesh and await its result event. Ids are
// checked before anything is sent, so a bad id fails here with `invalid_id` instead of being
// rejected (without a result) by a tool service.
import {
  headers as natsHeaders,
  type NatsConnection,
  type Subscription,
} from '@nats-io/transport-node';
import { v7 as uuidv7 } from 'uuid';
import {
  DEFAULT_ROOT,
  Header,
  IdKind,
  MeshError,
  RetryableError,
  assertId,
  createSubjects,
  decodeMessage,
  encodeMessage,
  toolCallEnvelope,
  type AfterExecution,
  type CallContext,
  type McpCallEnvelope,
  type Subjects,
  type ToolResultEvent,
} from '@toolmesh/protocol';
import { StreamPublishError, streamPublisher, streamQuotaError } from '@toolmesh/stream-publish';
import { SpanKind, contextFromTraceparent, traceHeaders, withSpan } from '@toolmesh/telemetry';
import { explainNoStream } from './explain.ts';

export interface ToolCallRequest {
  project: string;
  channel: string;
  /** Full tool name, `<target>.<tool>`, e.g. `builtin.echo`. */
  tool: string;
  arguments?: Record<string, unknown>;
  /** Defaults to a fresh UUIDv7. Reuse an id to make a retry idempotent. */
  toolCallId?: string;
  /** The call's deadline, enforced by the tool service. */
  timeoutMs?: number;
  afterExecution?: AfterExecution;
  /**
   * Let a non-idempotent tool run again when the instance running this call died mid-run
   * (default: the call ends `interrupted` instead).
   */
  rerunOnTakeover?: boolean;
  /** A 2026-07-28 MCP client's envelope, for an MCP tool (passed to the server as is). */
  mcp?: McpCallEnvelope;
  /** Ask for a wakeup of this agent when the result is written (agent workers use this). */
  agentId?: string;
  turnId?: string;
  turnEpoch?: number;
  /**
   * Where the call comes from, in your terms: `session_id` groups calls (history filters by it),
   * `metadata` is a small object kept with the execution. At most 4 096 bytes as JSON.
   */
  context?: CallContext;
  /**
   * The W3C trace context the call joins. Defaults to the active span's, when a tracer
   * provider is registered; the publish itself is a span of that trace.
   */
  traceparent?: string;
}

export interface PublishOptions {
  /** How long the publish waits for JetStream's acknowledgement (the client's default else). */
  publishTimeoutMs?: number;
}

export interface CallOptions extends PublishOptions {
  /** How long to wait for the result event; defaults to timeoutMs + 5 s, or 65 s. */
  waitMs?: number;
  signal?: AbortSignal;
}

export type ToolResult = ToolResultEvent;

export interface Published {
  toolCallId: string;
  subject: string;
  seq: number;
  duplicate: boolean;
}

export interface Client {
  readonly subjects: Subjects;
  /**
   * Fire and forget: resolves once JetStream stored the call. Rejects with
   * PublishOutcomeUnknownError when it was sent but not acknowledged (it may run: send it again
   * under the same toolCallId), with another error when it was not stored.
   */
  publishToolCall(req: ToolCallRequest, opts?: PublishOptions): Promise<Published>;
  /**
   * Publishes a call and resolves with its result (whatever its status); rejects as
   * publishToolCall does when the publish fails, or with ResultWaitTimeoutError.
   */
  callTool(req: ToolCallRequest, opts?: CallOptions): Promise<ToolResult>;
  /** Asks every tool-service instance to abort a running call. */
  cancel(req: {
    project: string;
    channel: string;
    toolCallId: string;
    reason?: string;
  }): Promise<void>;
  close(): Promise<void>;
}

export class ResultWaitTimeoutError extends MeshError {
  constructor(toolCallId: string, waitMs: number) {
    super('timeout', `no result for tool call ${toolCallId} within ${waitMs} ms`, {
      details: { tool_call_id: toolCallId },
    });
  }
}

/**
 * The call was sent but JetStream's acknowledgement never came (it timed out, or the connection
 * closed meanwhile): the call may have been stored, and then it runs. Never answer this with a
 * new tool_call_id; send the call again under `toolCallId` (safe: the mesh runs an id once).
 * Its details say `outcome: "unknown"`, so it is told apart by its details, not only by class.
 */
export class PublishOutcomeUnknownError extends RetryableError {
  readonly toolCallId: string;
  constructor(toolCallId: string, cause: unknown) {
    super(
      `the call ${toolCallId} was sent but not acknowledged: it may run; send it again under the same tool_call_id, never a new one (${(cause as Error).message})`,
      { cause, details: { tool_call_id: toolCallId, outcome: 'unknown' } },
    );
    this.toolCallId = toolCallId;
  }
}

/** Whether an error means "the call may or may not have been stored" (by its details). */
export function isOutcomeUnknown(err: unknown): boolean {
  return (
    err instanceof MeshError &&
    err.code === 'unavailable' &&
    (err.details as { outcome?: unknown } | undefined)?.outcome === 'unknown'
  );
}

export interface ClientOptions {
  nc: NatsConnection;
  /** Subject root of the deployment; `cg` unless it was configured otherwise. */
  root?: string;
  /**
   * The bus credential this connection authenticates as (see credentialIdOf): sent with every
   * call as CG-Credential-Id, so its executions record it.
   */
  credentialId?: string | undefined;
  /** How long a publish waits for JetStream's acknowledgement (default 5 s). */
  publishTimeoutMs?: number | undefined;
}

export function createClient(opts: ClientOptions): Client {
  const { nc } = opts;
  const subjects = createSubjects(opts.root ?? DEFAULT_ROOT);
  const waiters = new Map<string, (r: ToolResult) => void>();
  const subs = new Map<string, Promise<Subscription>>();

  /** One shared subscription per project and channel, flushed before the first publish. */
  function listen(project: string, channel: string): Promise<Subscription> {
    const key = `${project}/${channel}`;
    let sub = subs.get(key);
    if (!sub) {
      const s = nc.subscribe(subjects.toolResultFilter({ project, channel }), {
        callback: (err, msg) => {
          // Refused by the server (nats.js passes no message then): forget it, so that a later
          // call subscribes again rather than waiting on a subscription that is gone.
          if (err) {
            if (subs.get(key) === sub) subs.delete(key);
            return;
          }
          // Every result of the channel arrives here, most of them other callers' when many
          // share it: those named by their header are passed over without being decoded.
          const named = msg.headers?.get(Header.toolCallId);
          if (named && !waiters.has(`${project}/${named}`)) return;
          try {
            const ev = decodeMessage('tool_result', msg.data);
            waiters.get(`${project}/${ev.tool_call_id}`)?.(ev);
          } catch {
            // Not ours to judge: a malformed event from elsewhere is ignored by this waiter.
          }
        },
      });
      sub = nc.flush().then(() => s);
      subs.set(key, sub);
    }
    return sub;
  }

  async function publishToolCall(
    req: ToolCallRequest,
    po: PublishOptions,
    resendNonce?: string,
  ): Promise<Published> {
    const timeoutMs = po.publishTimeoutMs ?? opts.publishTimeoutMs;
    const toolCallId = assertId(IdKind.toolCall, req.toolCallId ?? uuidv7());
    const envelope = toolCallEnvelope(subjects, {
      project: req.project,
      channel: req.channel,
      call: {
        tool_call_id: toolCallId,
        tool_name: req.tool,
        arguments: req.arguments ?? {},
        after_execution: req.afterExecution ?? 'suspend',
        ...(req.timeoutMs !== undefined ? { timeout_ms: req.timeoutMs } : {}),
        ...(req.rerunOnTakeover !== undefined ? { rerun_on_takeover: req.rerunOnTakeover } : {}),
        ...(req.mcp ? { mcp: req.mcp } : {}),
        ...(req.context !== undefined ? { context: req.context } : {}),
      },
      turn: { agentId: req.agentId, turnId: req.turnId, turnEpoch: req.turnEpoch },
      credentialId: opts.credentialId,
      resendNonce,
    });
    const { subject } = envelope;
    const h = natsHeaders();
    for (const [k, v] of Object.entries(envelope.headers)) h.set(k, v);
    const explicit = req.traceparent;
    const parent = explicit === undefined ? undefined : contextFromTraceparent(explicit);
    return withSpan(
      'cmd.tool publish',
      {
        kind: SpanKind.PRODUCER,
        ...(parent ? { parent } : {}),
        attributes: { 'messaging.system': 'nats', 'messaging.destination.name': subject },
      },
      async () => {
        const traceparent = traceHeaders()[Header.traceparent] ?? explicit;
        if (traceparent !== undefined) h.set(Header.traceparent, traceparent);
        try {
          const ack = await streamPublisher(nc).publish(subject, envelope.data, {
            headers: h,
            msgId: envelope.msgID,
            ...(timeoutMs !== undefined ? { timeoutMs } : {}),
          });
          return { toolCallId, subject, seq: ack.seq, duplicate: ack.duplicate };
        } catch (cause) {
          if (cause instanceof StreamPublishError && cause.outcomeUnknown)
            throw new PublishOutcomeUnknownError(toolCallId, cause);
          const quota = streamQuotaError(cause, req.project);
          if (quota) throw quota;
          const why =
            cause instanceof StreamPublishError && cause.failure === 'no_stream'
              ? explainNoStream(cause.message, nc.getServer(), subjects.root)
              : (cause as Error).message;
          throw new RetryableError(`publishing ${req.tool} failed: ${why}`, { cause });
        }
      },
    );
  }

  async function callTool(req: ToolCallRequest, o: CallOptions = {}): Promise<ToolResult> {
    const toolCallId = assertId(IdKind.toolCall, req.toolCallId ?? uuidv7());
    const waitMs = o.waitMs ?? (req.timeoutMs ?? 60_000) + 5_000;
    await listen(req.project, req.channel);
    const key = `${req.project}/${toolCallId}`;
    let timer: NodeJS.Timeout | undefined;
    let onAbort: (() => void) | undefined;
    const result = new Promise<ToolResult>((resolve, reject) => {
      waiters.set(key, resolve);
      timer = setTimeout(() => reject(new ResultWaitTimeoutError(toolCallId, waitMs)), waitMs);
      if (o.signal) {
        onAbort = () =>
          reject(o.signal?.reason instanceof Error ? o.signal.reason : new Error('aborted'));
        o.signal.addEventListener('abort', onAbort, { once: true });
      }
    });
    // The wait may end (timeout, abort) while the publish is still pending; the rejection is
    // observed below, this only keeps it from being reported as unhandled meanwhile.
    result.catch(() => undefined);
    try {
      const po = o.publishTimeoutMs !== undefined ? { publishTimeoutMs: o.publishTimeoutMs } : {};
      const sent = await publishToolCall({ ...req, toolCallId }, po);
      // A deduplicated publish means this id was sent moments ago; its result event may be long
      // gone. Send it once more under another Nats-Msg-Id: the tool service answers a known id
      // with its original result and never runs it twice.
      if (sent.duplicate) await publishToolCall({ ...req, toolCallId }, po, uuidv7());
      return await result;
    } finally {
      waiters.delete(key);
      clearTimeout(timer);
      if (onAbort) o.signal?.removeEventListener('abort', onAbort);
    }
  }

  return {
    subjects,
    publishToolCall: (req, po = {}) => publishToolCall(req, po),
    callTool,
    cancel: async ({ project, channel, toolCallId, reason }) => {
      const data = encodeMessage('cancel', {
        v: 1,
        tool_call_id: assertId(IdKind.toolCall, toolCallId),
        ...(reason ? { reason } : {}),
      });
      nc.publish(subjects.cancel({ project, channel }), data);
      await nc.flush();
    },
    close: async () => {
      for (const s of subs.values()) (await s).unsubscribe();
      subs.clear();
    },
  };
}
