// Encoding and decoding of catalog messages: payloads are validated when sent and when
// received, and every way a body can be wrong maps to one error code.
import type { z } from 'zod';
import { ProtocolError } from './errors.ts';
import { Catalog, type Message, type MessageType } from './messages.ts';

const encoder = new TextEncoder();
const decoder = new TextDecoder('utf-8', { fatal: true });

export function encodeMessage<T extends MessageType>(
  type: T,
  value: z.input<(typeof Catalog)[T]>,
): Uint8Array {
  const parsed = Catalog[type].safeParse(value);
  if (!parsed.success) throw schemaError(type, parsed.error);
  let text: string;
  try {
    // The schema lets `arguments` hold anything; a BigInt or a cycle only fails here.
    text = JSON.stringify(parsed.data);
  } catch (cause) {
    throw new ProtocolError(
      'invalid_message',
      `invalid ${type}: not serializable as JSON: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  return encoder.encode(text);
}

/** Parses JSON text; throws `malformed_json` for bytes that are not UTF-8 JSON. */
export function parseJson(data: Uint8Array): unknown {
  try {
    return JSON.parse(decoder.decode(data)) as unknown;
  } catch (cause) {
    throw new ProtocolError(
      'malformed_json',
      `body is not valid JSON: ${(cause as Error).message}`,
      { cause },
    );
  }
}

export function decodeMessage<T extends MessageType>(type: T, data: Uint8Array): Message<T> {
  return validateMessage(type, parseJson(data));
}

export function validateMessage<T extends MessageType>(type: T, value: unknown): Message<T> {
  if (typeof value === 'object' && value !== null && 'v' in value && value.v !== 1) {
    throw new ProtocolError(
      'unsupported_version',
      `${type} version ${JSON.stringify(value.v)} is not supported (expected 1)`,
    );
  }
  const parsed = Catalog[type].safeParse(value);
  if (!parsed.success) throw schemaError(type, parsed.error);
  return parsed.data as Message<T>;
}

function schemaError(type: string, error: z.ZodError): ProtocolError {
  const issues = error.issues.map((i) => ({ path: i.path.join('.'), message: i.message }));
  const first = issues[0];
  const where = first && first.path ? `${first.path}: ` : '';
  return new ProtocolError(
    'invalid_message',
    `invalid ${type}: ${where}${first?.message ?? 'schema mismatch'}`,
    {
      details: { issues },
    },
  );
}
