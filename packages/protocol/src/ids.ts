// Id rules shared by every edge of the mesh. Ids that appear in subjects (project, channel,
// agent, target, tool) are single NATS tokens: no dots, wildcards or whitespace can slip in.
import { ProtocolError } from './errors.ts';

export const ID_PATTERN = /^[A-Za-z0-9_-]{1,64}$/;
/** Tool call ids travel in headers, KV keys and Nats-Msg-Id, never as a subject token. */
export const TOOL_CALL_ID_PATTERN = /^[A-Za-z0-9_-]{1,128}$/;

export const IdKind = {
  project: 'project',
  channel: 'channel',
  agent: 'agent',
  target: 'target',
  tool: 'tool',
  toolCall: 'tool_call_id',
} as const;
export type IdKind = (typeof IdKind)[keyof typeof IdKind];

export function isValidId(value: unknown): value is string {
  return typeof value === 'string' && ID_PATTERN.test(value);
}

export function isValidToolCallId(value: unknown): value is string {
  return typeof value === 'string' && TOOL_CALL_ID_PATTERN.test(value);
}

/** Throws `invalid_id` naming the offending field, so the error reads well at any edge. */
export function assertId(kind: IdKind, value: unknown): string {
  const ok = kind === IdKind.toolCall ? isValidToolCallId(value) : isValidId(value);
  if (!ok) {
    const limit = kind === IdKind.toolCall ? 128 : 64;
    throw new ProtocolError(
      'invalid_id',
      `${kind} ${JSON.stringify(value)} is not a valid id: use 1-${limit} characters of [A-Za-z0-9_-]`,
      { details: { field: kind } },
    );
  }
  return value as string;
}
