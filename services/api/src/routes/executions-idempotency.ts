// What makes POST /executions safe to send again (docs/protocol.md 11.1): the request's
// fingerprint, kept on the execution it queued and with its Idempotency-Key, and the header's
// parsing. The fingerprint covers what the call does (tool, arguments, channel, deadline,
// context) and who asked (the API key), not how long this request waits for it: a request sent
// again with another wait is the same call. Object keys are sorted first, so a client that
// serializes its arguments in another order sends the same request.
import { createHash } from 'node:crypto';
import { ApiError } from '../errors.ts';

/** Longest Idempotency-Key accepted, in characters. */
export const IDEMPOTENCY_KEY_MAX = 255;

export interface CallRequest {
  tool: string;
  arguments: Record<string, unknown>;
  channel: string;
  timeout_ms?: number | undefined;
  context?: unknown;
}

/** JSON with every object's keys in order: the same value gives the same text. */
function canonical(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`;
  if (v !== null && typeof v === 'object') {
    const entries = Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

const sha256 = (text: string) => createHash('sha256').update(text).digest('hex');

/** The fingerprint of the call a request asks for, kept on the execution it queues. */
export function callFingerprint(body: CallRequest, keyId: string | undefined): string {
  return sha256(
    canonical({
      v: 1,
      key_id: keyId ?? null,
      tool: body.tool,
      arguments: body.arguments,
      channel: body.channel,
      timeout_ms: body.timeout_ms ?? null,
      context: body.context ?? null,
    }),
  );
}

/**
 * The fingerprint an Idempotency-Key is held with: the call's, and the tool_call_id the request
 * named (a key first sent without one and then with one is another request).
 */
export function keyFingerprint(call: string, toolCallId: string | undefined): string {
  return sha256(`${call}\u0000${toolCallId ?? ''}`);
}

// A Structured Field String (RFC 8941: printable ASCII between quotes, `\"` and `\\` escaped),
// as the draft asks; a bare value of visible ASCII is taken as the same key, as many clients send.
const SF_STRING = /^"((?:[\x20\x21\x23-\x5b\x5d-\x7e]|\\["\\])*)"$/;
const BARE = /^[\x21-\x7e]+$/;

/** The request's Idempotency-Key, undefined without one; a malformed one is a 400. */
export function idempotencyKeyOf(header: string | string[] | undefined): string | undefined {
  if (header === undefined) return undefined;
  const bad = (why: string) =>
    new ApiError(
      'invalid_idempotency_key',
      `Idempotency-Key ${why}: send one string of 1-${IDEMPOTENCY_KEY_MAX} printable ASCII characters, e.g. "8e03978e-40d5-43e8-bc93-6894a57f9324"`,
    );
  if (Array.isArray(header)) throw bad('is sent more than once');
  const raw = header.trim();
  const quoted = SF_STRING.exec(raw);
  const key = quoted ? (quoted[1] ?? '').replace(/\\(["\\])/g, '$1') : raw;
  if (!quoted && !BARE.test(raw)) throw bad('is not a string');
  if (key.length === 0) throw bad('is empty');
  if (key.length > IDEMPOTENCY_KEY_MAX) throw bad(`is longer than ${IDEMPOTENCY_KEY_MAX}`);
  return key;
}
