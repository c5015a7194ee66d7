// The building blocks of the configuration schema: number, host and pattern checks whose
// messages read "expected <what>, got <value>" (the loader prefixes where the value came from),
// and the section wrapper every table of config.toml is parsed with.
import { z } from 'zod';

export function showValue(value: unknown): string {
  if (value instanceof Date) return value.toISOString();
  if (value === undefined) return 'nothing';
  if (typeof value === 'bigint') return value.toString();
  const text = JSON.stringify(value) ?? typeof value;
  return text.length > 80 ? `${text.slice(0, 77)}...` : text;
}

export function expected(what: string): { error: (issue: { input?: unknown }) => string } {
  return { error: (issue) => `expected ${what}, got ${showValue(issue.input)}` };
}

export function positiveInt(): z.ZodInt {
  const e = expected('a positive integer');
  return z.int(e).positive(e);
}

export function hostName(): z.ZodString {
  return z.string(expected('a host name or address')).min(1, expected('a host name or address'));
}

/** A TCP port; 0 lets the system pick a free one. */
export function port(): z.ZodInt {
  return z
    .int(expected('a port number'))
    .min(0, expected('a port number'))
    .max(65_535, expected('a port number'));
}

export function intAtLeast(min: number): z.ZodInt {
  const e = expected(`an integer >= ${min}`);
  return z.int(e).min(min, e);
}

export function intBetween(min: number, max: number): z.ZodInt {
  const e = expected(`an integer from ${min} to ${max}`);
  return z.int(e).min(min, e).max(max, e);
}

export function matching(pattern: RegExp, what: string): z.ZodString {
  const e = expected(what);
  return z.string(e).regex(pattern, e);
}

export function section<T extends z.core.$ZodLooseShape>(shape: T) {
  return z.strictObject(shape, expected('a table'));
}

export const ID = /^[A-Za-z0-9_-]{1,64}$/;

export const HTTP_URL_OR_EMPTY = /^$|^https?:\/\/\S+$/;

/** Refuses a key of a section that exceeds another key of the same section. */
export function notAbove<K extends string>(
  ctx: z.RefinementCtx,
  section: string,
  values: Record<K, number>,
  key: K,
  limit: K,
): void {
  if (values[key] > values[limit]) {
    ctx.addIssue({
      code: 'custom',
      path: [key],
      message: `must not exceed ${section}.${limit} (${values[limit]}), got ${values[key]}`,
    });
  }
}
