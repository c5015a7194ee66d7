// Checks of flag values that commander leaves to us; each bad value is a usage error (exit 2).
import { usageError } from '../exit.ts';

export function jsonObject(text: string, flag: string): Record<string, unknown> {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (err) {
    throw usageError(`${flag} is not valid JSON: ${(err as Error).message}`);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw usageError(`${flag} must be a JSON object, e.g. '{"text":"hi"}'`);
  }
  return value as Record<string, unknown>;
}

export function intOption(text: string | undefined, flag: string): number | undefined {
  if (text === undefined) return undefined;
  const n = Number(text);
  if (!Number.isSafeInteger(n) || n <= 0)
    throw usageError(`${flag} must be a positive integer, got ${JSON.stringify(text)}`);
  return n;
}
