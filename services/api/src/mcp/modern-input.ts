// An MCP server's input requests (SEP-2322, 2026-07-28) through the mesh. A 2026 client's
// request reaches the server on that revision with the client's capabilities (the envelope,
// McpCallEnvelope); when the server answers `input_required`, the client gets the server's input
// requests as sent and a requestState of the mesh: the server's own state (if any) sealed with
// an HMAC-SHA256 tag and bound to the project, the server endpoint, the method and the tool or
// prompt name, with an expiry. The client re-sends its request with `inputResponses` and that
// state; the mesh checks the tag and the binding, and sends the answers with the server's own
// state back to the server (a new call, with its own card). A state changed on the way, or
// sealed for another project, server, tool or deployment, is refused (-32602) and never reaches
// the server.
//
// The key is derived from [secrets] key (HMAC-SHA256 of a fixed label), so every api instance
// of a deployment checks the states of the others; without [secrets] key each instance has a
// random key of its own, and a re-sent request must reach the same instance.
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Logger } from 'pino';
import {
  ProtocolError,
  ProtocolErrorCode,
  type InputRequiredResult,
} from '@modelcontextprotocol/server';
import type { McpCallEnvelope } from '@toolmesh/protocol';

const PREFIX = 'tm-input.1.';
/** How long a client may take to answer: past it the state is refused. */
export const INPUT_STATE_TTL_MS = 15 * 60_000;
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const PARAM_HEADER = /^mcp-param-[a-z0-9!#$%&'*+.^_`|~-]{1,128}$/;
const KEY_LABEL = 'toolmesh/mcp-input-request-state/v1';

/** What a state is bound to: the request it may be echoed on. */
export interface InputBinding {
  project: string;
  /** The MCP server of a server's own endpoint; undefined on the project's facade. */
  server: string | undefined;
  method: string;
  /** The tool or prompt name as the client sent it. */
  name: string;
}

/**
 * An input request of the mesh a call waits on: a 2025-era server's elicitation asked of a
 * 2026-07-28 client (modern-elicit.ts).
 */
export interface WaitingInput {
  toolCallId: string;
  inputRequestId: string;
}

interface Sealed {
  b: string;
  /** The server's own requestState. */
  u?: string;
  /** The waiting input request: tool_call_id and input_request_id. */
  w?: [string, string];
  exp: number;
}

/** What a sealed state holds. */
export interface OpenedState {
  upstream: string | undefined;
  waiting?: WaitingInput | undefined;
}

export interface InputStates {
  /** Is this requestState one the mesh sealed (not an approval's, modern-approval.ts)? */
  owns(raw: string): boolean;
  seal(binding: InputBinding, upstreamState: string | undefined, waiting?: WaitingInput): string;
  /** What is inside; throws -32602 when the tag, binding or expiry is wrong. */
  open(raw: string, binding: InputBinding): OpenedState;
}

const bindingOf = (b: InputBinding) =>
  JSON.stringify([b.project, b.server ?? null, b.method, b.name]);

const invalid = (why: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `invalid requestState: ${why}`, {
    code: 'invalid_request_state',
  });

export function createInputStates(
  secretsKeyBase64: string,
  log: Logger,
  now: () => number = Date.now,
): InputStates {
  let secret: Buffer;
  if (secretsKeyBase64 === '') {
    log.warn(
      'no [secrets] key: the requestState of MCP input requests is sealed with a key of this instance only',
    );
    secret = randomBytes(32);
  } else {
    secret = Buffer.from(secretsKeyBase64, 'base64');
  }
  const key = createHmac('sha256', secret).update(KEY_LABEL).digest();
  const tag = (data: string) => createHmac('sha256', key).update(data).digest();
  return {
    owns: (raw) => raw.startsWith(PREFIX),
    seal(binding, upstream, waiting) {
      const sealed: Sealed = {
        b: bindingOf(binding),
        ...(upstream !== undefined ? { u: upstream } : {}),
        ...(waiting ? { w: [waiting.toolCallId, waiting.inputRequestId] } : {}),
        exp: now() + INPUT_STATE_TTL_MS,
      };
      const data = Buffer.from(JSON.stringify(sealed)).toString('base64url');
      return `${PREFIX}${data}.${tag(data).toString('base64url')}`;
    },
    open(raw, binding) {
      const [data, mac, ...rest] = raw.slice(PREFIX.length).split('.');
      if (!data || !mac || rest.length > 0) throw invalid('malformed');
      const want = tag(data);
      const got = Buffer.from(mac, 'base64url');
      if (got.length !== want.length || !timingSafeEqual(got, want)) {
        throw invalid('its signature does not match (changed, or sealed by another deployment)');
      }
      const sealed = JSON.parse(Buffer.from(data, 'base64url').toString('utf8')) as Sealed;
      if (sealed.b !== bindingOf(binding)) {
        throw invalid(`it was issued for another request, not ${binding.method} ${binding.name}`);
      }
      if (sealed.exp < now()) throw invalid('it has expired: make the request again');
      return {
        upstream: sealed.u,
        ...(sealed.w ? { waiting: { toolCallId: sealed.w[0], inputRequestId: sealed.w[1] } } : {}),
      };
    },
  };
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** The envelope of a 2026-07-28 request: the client's capabilities, answers and the server's state. */
export function envelopeOf(
  mcpReq: { envelope?: unknown; inputResponses?: Record<string, unknown> | undefined },
  upstreamState: string | undefined,
  req?: Request,
): McpCallEnvelope {
  const caps = isRecord(mcpReq.envelope) ? mcpReq.envelope[CLIENT_CAPABILITIES_META] : undefined;
  const params: Record<string, string> = {};
  req?.headers.forEach((value, name) => {
    if (!name.startsWith('mcp-param-')) return;
    if (!PARAM_HEADER.test(name) || value.length > 8_192) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `the ${name} header is not a valid Mcp-Param header (a token name, at most 8 KiB)`,
      );
    }
    params[name] = value;
  });
  const count = Object.keys(params).length;
  if (count > 32) {
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `${count} Mcp-Param headers: at most 32`,
    );
  }
  return {
    client_capabilities: isRecord(caps) ? caps : {},
    ...(count > 0 ? { param_headers: params } : {}),
    ...(mcpReq.inputResponses !== undefined ? { input_responses: mcpReq.inputResponses } : {}),
    ...(upstreamState !== undefined ? { request_state: upstreamState } : {}),
  };
}

/**
 * Opens the requestState of a re-sent request when the mesh sealed it: the server's own state
 * inside. Undefined when there is none; `foreign` when it is not the mesh's input state.
 */
export function openState(
  states: InputStates,
  raw: unknown,
  binding: InputBinding,
): OpenedState | 'foreign' | undefined {
  if (raw === undefined) return undefined;
  if (typeof raw !== 'string') throw invalid('not a string');
  if (!states.owns(raw)) return 'foreign';
  return states.open(raw, binding);
}

/** A server's input_required answer for the client, its state sealed. */
export function inputRequiredFor(
  states: InputStates,
  answer: Record<string, unknown>,
  binding: InputBinding,
): InputRequiredResult {
  const upstream = answer['requestState'];
  return {
    resultType: 'input_required',
    inputRequests: (isRecord(answer['inputRequests'])
      ? answer['inputRequests']
      : {}) as InputRequiredResult['inputRequests'],
    requestState: states.seal(binding, typeof upstream === 'string' ? upstream : undefined),
  };
}

/**
 * The server's own JSON-RPC error of a call made on the 2026-07-28 revision (kept in the card's
 * details by the tools service, mcp-modern.ts): answered to the client as the server sent it.
 */
export function upstreamProtocolError(result: unknown): ProtocolError | undefined {
  if (!isRecord(result) || result['isError'] !== true) return undefined;
  const structured = result['structuredContent'];
  const error = isRecord(structured) ? structured['error'] : undefined;
  const details = isRecord(error) ? error['details'] : undefined;
  const e = isRecord(details) ? details['mcp_error'] : undefined;
  if (!isRecord(e) || typeof e['code'] !== 'number' || typeof e['message'] !== 'string') {
    return undefined;
  }
  return new ProtocolError(e['code'], e['message'], e['data']);
}
