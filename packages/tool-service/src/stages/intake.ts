// Stage 1, intake: turns a raw delivery into a validated call, or into a rejection carrying the
// error code and whatever ids could be recovered, so that even a malformed message gets a failed
// result.
import type { Logger } from 'pino';
import type { Delivery, Disposition } from '@toolmesh/bus';
import {
  Header,
  IdKind,
  MeshError,
  assertJsonDepth,
  ProtocolError,
  assertId,
  isValidId,
  isValidToolCallId,
  parseJson,
  toolCallIdOfMsgId,
  validateMessage,
  type CallContext,
  type ErrorCode,
  type Subjects,
  type ToolCall,
} from '@toolmesh/protocol';
import type { RunnableTool, ToolDefinition } from '../define.ts';

export interface CallIds {
  project: string;
  channel: string;
  target: string;
  tool: string;
  toolCallId: string;
  agentId: string | undefined;
  turnId: string | undefined;
  turnEpoch: number | undefined;
  /** The call's arguments once the body validated (kept on the execution row). */
  arguments?: Record<string, unknown> | undefined;
  /** The caller's context once the body validated (kept on the execution row). */
  context?: CallContext | undefined;
  /** The bus credential the publisher named (CG-Credential-Id). */
  credentialId?: string | undefined;
}

/** A well-formed call whose tool is not looked up yet. */
export interface Intake {
  ok: true;
  ids: CallIds;
  call: ToolCall;
}

/** A call bound to the tool that runs it, with validated arguments and its deadline. */
export interface Bound {
  tool: RunnableTool;
  args: unknown;
  timeoutMs: number;
}

export interface Rejection {
  ok: false;
  /** Undefined when not even project and channel could be trusted: nothing can be written. */
  ids: CallIds | undefined;
  code: ErrorCode;
  message: string;
  details?: Record<string, unknown>;
}

export interface IntakeLimits {
  maxCallBytes: number;
  /** tools.max_arguments_depth (optional: 64). */
  maxArgumentsDepth?: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
}

function reject(ids: CallIds | undefined, err: unknown): Rejection {
  if (err instanceof MeshError) {
    return {
      ok: false,
      ids,
      code: err.code,
      message: err.message,
      ...(err.details ? { details: err.details } : {}),
    };
  }
  throw err;
}

/** The id a result is filed under when the body's own id is missing or unusable. */
function fallbackToolCallId(d: Delivery, project: string): string {
  const header = d.header(Header.toolCallId);
  if (isValidToolCallId(header)) return header;
  return toolCallIdOfMsgId(project, d.header(Header.msgId)) ?? `seq-${d.streamSeq}`;
}

/**
 * Reads project, channel and tool from the subject. Project and channel must be valid ids (they
 * decide where anything may be written); a bad tool token is reported as a failed result filed
 * under them, since the caller can be told.
 */
function subjectIds(
  d: Delivery,
  subjects: Subjects,
): { project: string; channel: string; target: string; tool: string; error?: Error } | Rejection {
  try {
    const parsed = subjects.parse(d.subject);
    if (parsed.kind === 'cmd' && parsed.component === 'tool') return parsed;
    return {
      ok: false,
      ids: undefined,
      code: 'invalid_message',
      message: `${d.subject} is not a tool call subject`,
    };
  } catch (err) {
    const t = d.subject.split('.');
    const [, , project, channel, kind, component, target] = t;
    if (
      isValidId(project) &&
      isValidId(channel) &&
      isValidId(target) &&
      kind === 'cmd' &&
      component === 'tool'
    ) {
      return { project, channel, target, tool: t.slice(7).join('.'), error: err as Error };
    }
    return reject(undefined, err);
  }
}

const TURN_ID_MAX = 128;
const UUID = /^[0-9a-f]{8}-([0-9a-f]{4}-){3}[0-9a-f]{12}$/i;

/** Header checks; valid headers are kept even when another part of the call is bad, so an
 *  agent is woken by the failed result of a call it made. */
function readHeaders(d: Delivery, ids: CallIds): ProtocolError | undefined {
  const agent = d.header(Header.agentId);
  const turn = d.header(Header.turnId);
  const epoch = d.header(Header.turnEpoch);
  const credential = d.header(Header.credentialId);
  if (credential !== undefined) {
    if (!UUID.test(credential)) {
      return new ProtocolError(
        'invalid_message',
        `header ${Header.credentialId} must be a bus credential id (a UUID)`,
      );
    }
    ids.credentialId = credential.toLowerCase();
  }
  if (agent !== undefined) {
    if (!isValidId(agent)) {
      return new ProtocolError(
        'invalid_id',
        `header ${Header.agentId} ${JSON.stringify(agent)} is not a valid id`,
      );
    }
    ids.agentId = agent;
  }
  if (turn !== undefined) {
    if (turn.length === 0 || turn.length > TURN_ID_MAX) {
      return new ProtocolError(
        'invalid_message',
        `header ${Header.turnId} must be 1-${TURN_ID_MAX} characters`,
      );
    }
    ids.turnId = turn;
  }
  if (epoch !== undefined) {
    const n = /^\d{1,15}$/.test(epoch) ? Number(epoch) : NaN;
    if (!Number.isSafeInteger(n)) {
      return new ProtocolError(
        'invalid_message',
        `header ${Header.turnEpoch} must be a non-negative integer`,
      );
    }
    ids.turnEpoch = n;
  }
  return undefined;
}

export function intake(d: Delivery, subjects: Subjects, limits: IntakeLimits): Intake | Rejection {
  const subject = subjectIds(d, subjects);
  if ('ok' in subject) return subject;
  const ids: CallIds = {
    project: subject.project,
    channel: subject.channel,
    target: subject.target,
    tool: subject.tool,
    toolCallId: fallbackToolCallId(d, subject.project),
    agentId: undefined,
    turnId: undefined,
    turnEpoch: undefined,
  };
  const headerError = readHeaders(d, ids);
  try {
    // The body is parsed before the size check (NATS already bounds it): an oversize call's
    // failure must still be filed under the id its caller waits on.
    let body: unknown;
    let parseError: Error | undefined;
    try {
      body = parseJson(d.data);
    } catch (err) {
      parseError = err as Error;
    }
    if (
      typeof body === 'object' &&
      body !== null &&
      'tool_call_id' in body &&
      isValidToolCallId(body.tool_call_id)
    ) {
      ids.toolCallId = body.tool_call_id;
    }
    if (subject.error !== undefined) throw subject.error;
    if (headerError) throw headerError;
    if (d.data.length > limits.maxCallBytes) {
      throw new ProtocolError(
        'payload_too_large',
        `tool call of ${d.data.length} bytes exceeds the limit of ${limits.maxCallBytes} bytes`,
        { details: { size_bytes: d.data.length, limit_bytes: limits.maxCallBytes } },
      );
    }
    if (parseError !== undefined) throw parseError;
    // Before anything recurses over the body (zod, ajv, JSON.stringify, Postgres): a call a few
    // thousand levels deep overflows their stack, which would read as a crash and be retried.
    const maxDepth = limits.maxArgumentsDepth ?? 64;
    if (typeof body === 'object' && body !== null && 'arguments' in body) {
      assertJsonDepth(body.arguments, maxDepth, 'arguments', 'tools.max_arguments_depth');
    }
    assertJsonDepth(body, maxDepth + 1, 'the call', 'tools.max_arguments_depth');
    if (typeof body === 'object' && body !== null && 'tool_call_id' in body) {
      assertId(IdKind.toolCall, body.tool_call_id);
    }
    const call = validateMessage('tool_call', body);
    ids.arguments = call.arguments;
    ids.context = call.context;
    const headerId = d.header(Header.toolCallId);
    if (headerId !== undefined && headerId !== call.tool_call_id) {
      throw new ProtocolError(
        'id_mismatch',
        `header ${Header.toolCallId}=${JSON.stringify(headerId)} disagrees with body tool_call_id=${JSON.stringify(call.tool_call_id)}`,
      );
    }
    const expectedName = `${ids.target}.${ids.tool}`;
    if (call.tool_name !== expectedName) {
      throw new ProtocolError(
        'id_mismatch',
        `subject names tool ${expectedName} but the body names ${call.tool_name}`,
      );
    }
    return { ok: true, ids, call };
  } catch (err) {
    return reject(ids, err);
  }
}

/** The deadline of a call: its own (bounded by the limit) or the tool's default, capped. */
export function deadlineOf(
  call: ToolCall,
  toolDefaultMs: number | undefined,
  limits: IntakeLimits,
): number {
  if (call.timeout_ms !== undefined && call.timeout_ms > limits.maxTimeoutMs) {
    throw new ProtocolError(
      'invalid_message',
      `timeout_ms ${call.timeout_ms} exceeds the limit of ${limits.maxTimeoutMs} ms`,
      { details: { limit_ms: limits.maxTimeoutMs } },
    );
  }
  // A tool's own default never exceeds what the deployment allows.
  return call.timeout_ms ?? Math.min(toolDefaultMs ?? limits.defaultTimeoutMs, limits.maxTimeoutMs);
}

/** Binds a call to one of a static service's tools; a rejection when it cannot. */
export function bindStatic(
  accepted: Intake,
  tools: ReadonlyMap<string, ToolDefinition>,
  limits: IntakeLimits,
): Bound | Rejection {
  const { ids, call } = accepted;
  const expectedName = `${ids.target}.${ids.tool}`;
  try {
    const def = tools.get(ids.tool);
    if (!def) {
      throw new ProtocolError('unknown_tool', `no tool ${expectedName} is served here`, {
        details: { known: [...tools.keys()].map((t) => `${ids.target}.${t}`) },
      });
    }
    const timeoutMs = deadlineOf(call, def.timeoutMs, limits);
    const args = def.args.safeParse(call.arguments);
    if (!args.success) {
      const issues = args.error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
      const first = issues[0];
      throw new ProtocolError(
        'invalid_arguments',
        `invalid arguments for ${expectedName}: ${first?.path ? `${first.path}: ` : ''}${first?.message ?? 'schema mismatch'}`,
        { details: { issues } },
      );
    }
    return { tool: def, args: args.data, timeoutMs };
  } catch (err) {
    return reject(ids, err);
  }
}

/**
 * Stage 1, intake: the delivery read as a call (or as a rejection that can still be filed), or
 * how to settle a message that is neither. A registry service sees every tool call: those of
 * targets it does not serve are another service's, acked here before any lookup or lease.
 */
export function receive(
  d: Delivery,
  subjects: Subjects,
  limits: IntakeLimits,
  log: Logger,
  serves?: (target: string) => boolean,
): { accepted: Intake | Rejection; ids: CallIds } | { disposition: Disposition } {
  const accepted = intake(d, subjects, limits);
  const { ids } = accepted;
  if (serves && (!ids || !serves(ids.target))) return { disposition: { type: 'ack' } };
  if (!ids) {
    // Project or channel cannot be trusted: there is no place to file a result. The SDK and
    // the CLI refuse such ids before publishing; plain-NATS publishers see this in the logs.
    const r = accepted as Rejection;
    log.warn(
      { subject: d.subject, seq: d.streamSeq, code: r.code, reason: r.message },
      'call rejected at the edge',
    );
    return { disposition: { type: 'term', reason: `${r.code}: ${r.message}` } };
  }
  return { accepted, ids };
}
