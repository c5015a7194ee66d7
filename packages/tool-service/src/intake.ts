// Turns a raw delivery into a validated call, or into a rejection carrying the error code and
// whatever ids could be recovered, so that even a malformed message gets a failed result.
import type { Delivery } from '@toolmesh/bus';
import {
  Header,
  IdKind,
  MeshError,
  ProtocolError,
  assertId,
  isValidId,
  isValidToolCallId,
  parseJson,
  validateMessage,
  type ErrorCode,
  type Subjects,
  type ToolCall,
} from '@toolmesh/protocol';
import type { ToolDefinition } from './define.ts';

export interface CallIds {
  project: string;
  channel: string;
  target: string;
  tool: string;
  toolCallId: string;
  agentId: string | undefined;
  turnId: string | undefined;
  turnEpoch: number | undefined;
}

export interface Intake {
  ok: true;
  ids: CallIds;
  call: ToolCall;
  def: ToolDefinition;
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
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
}

function reject(ids: CallIds | undefined, err: unknown): Rejection {
  if (err instanceof MeshError) {
    return { ok: false, ids, code: err.code, message: err.message, ...(err.details ? { details: err.details } : {}) };
  }
  throw err;
}

/** The id a result is filed under when the body's own id is missing or unusable. */
function fallbackToolCallId(d: Delivery, project: string): string {
  const header = d.header(Header.toolCallId);
  if (isValidToolCallId(header)) return header;
  const msgId = d.header(Header.msgId);
  const fromMsgId = msgId?.startsWith(`${project}/`) ? msgId.slice(project.length + 1) : msgId;
  if (isValidToolCallId(fromMsgId)) return fromMsgId;
  return `seq-${d.streamSeq}`;
}

export function intake(
  d: Delivery,
  subjects: Subjects,
  tools: ReadonlyMap<string, ToolDefinition>,
  limits: IntakeLimits,
): Intake | Rejection {
  let parsed;
  try {
    parsed = subjects.parse(d.subject);
  } catch (err) {
    return reject(undefined, err);
  }
  if (parsed.kind !== 'cmd' || parsed.component !== 'tool') {
    return { ok: false, ids: undefined, code: 'invalid_message', message: `${d.subject} is not a tool call subject` };
  }
  const agentHeader = d.header(Header.agentId);
  const epochHeader = d.header(Header.turnEpoch);
  const ids: CallIds = {
    project: parsed.project,
    channel: parsed.channel,
    target: parsed.target,
    tool: parsed.tool,
    toolCallId: fallbackToolCallId(d, parsed.project),
    agentId: undefined,
    turnId: d.header(Header.turnId),
    turnEpoch: undefined,
  };
  try {
    // The body is parsed before the size check (NATS already bounds it): an oversize call's
    // failure must still be filed under the id its caller waits on.
    let body: unknown;
    let parseError: unknown;
    try {
      body = parseJson(d.data);
    } catch (err) {
      parseError = err;
    }
    if (typeof body === 'object' && body !== null && 'tool_call_id' in body && isValidToolCallId(body.tool_call_id)) {
      ids.toolCallId = body.tool_call_id;
    }
    if (d.data.length > limits.maxCallBytes) {
      throw new ProtocolError(
        'payload_too_large',
        `tool call of ${d.data.length} bytes exceeds the limit of ${limits.maxCallBytes} bytes`,
        { details: { size_bytes: d.data.length, limit_bytes: limits.maxCallBytes } },
      );
    }
    if (parseError !== undefined) throw parseError;
    if (typeof body === 'object' && body !== null && 'tool_call_id' in body) {
      assertId(IdKind.toolCall, body.tool_call_id);
    }
    const call = validateMessage('tool_call', body);
    const headerId = d.header(Header.toolCallId);
    if (headerId !== undefined && headerId !== call.tool_call_id) {
      throw new ProtocolError(
        'id_mismatch',
        `header ${Header.toolCallId}=${JSON.stringify(headerId)} disagrees with body tool_call_id=${JSON.stringify(call.tool_call_id)}`,
      );
    }
    const expectedName = `${parsed.target}.${parsed.tool}`;
    if (call.tool_name !== expectedName) {
      throw new ProtocolError(
        'id_mismatch',
        `subject names tool ${expectedName} but the body names ${call.tool_name}`,
      );
    }
    if (agentHeader !== undefined) {
      if (!isValidId(agentHeader)) assertId(IdKind.agent, agentHeader);
      ids.agentId = agentHeader;
    }
    if (epochHeader !== undefined) {
      const epoch = Number(epochHeader);
      if (!Number.isSafeInteger(epoch) || epoch < 0) {
        throw new ProtocolError('invalid_message', `header ${Header.turnEpoch} must be a non-negative integer`);
      }
      ids.turnEpoch = epoch;
    }
    const def = tools.get(parsed.tool);
    if (!def) {
      throw new ProtocolError('unknown_tool', `no tool ${expectedName} is served here`, {
        details: { known: [...tools.keys()].map((t) => `${parsed.target}.${t}`) },
      });
    }
    const timeoutMs = call.timeout_ms ?? def.timeoutMs ?? limits.defaultTimeoutMs;
    if (timeoutMs > limits.maxTimeoutMs) {
      throw new ProtocolError(
        'invalid_message',
        `timeout_ms ${timeoutMs} exceeds the limit of ${limits.maxTimeoutMs} ms`,
        { details: { limit_ms: limits.maxTimeoutMs } },
      );
    }
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
    return { ok: true, ids, call, def, args: args.data, timeoutMs };
  } catch (err) {
    return reject(ids, err);
  }
}
