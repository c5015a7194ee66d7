// Checks of flag values that commander leaves to us; each bad value is a usage error (exit 2).
import { readFile } from 'node:fs/promises';
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

/** The JSON object in the file an `@<path>` flag value names (an OAuth 2.0 auth config, say). */
export async function jsonObjectFile(at: string, flag: string): Promise<Record<string, unknown>> {
  const path = at.slice(1);
  const text = await readFile(path, 'utf8').catch((err: unknown) => {
    throw usageError(`${flag}: cannot read ${path}: ${(err as Error).message}`);
  });
  return jsonObject(text, `${flag} (${path})`);
}
