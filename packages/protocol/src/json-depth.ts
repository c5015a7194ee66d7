// How deeply a JSON value nests, measured without recursion. JSON.parse reads any depth (it is
// iterative), but nearly everything after it recurses: JSON.stringify, structuredClone, ajv,
// zod, Postgres' jsonb encoding. A value a few thousand levels deep makes each of them throw a
// RangeError (stack overflow), which looks like a crash, not bad input. Every value a tenant
// sends is measured with this right after parsing and refused with `nesting_too_deep`.
import { ProtocolError } from './errors.ts';

/**
 * The nesting depth of a value: 0 for a scalar, 1 for `{}` or `[1]`, 2 for `{"a": []}`.
 * Stops counting past `limit` (returns `limit + 1`), so the cost is bounded by the value's size
 * and never by an attacker's depth.
 */
export function jsonDepth(value: unknown, limit = Number.MAX_SAFE_INTEGER): number {
  if (typeof value !== 'object' || value === null) return 0;
  let max = 0;
  const stack: [unknown, number][] = [[value, 1]];
  while (stack.length > 0) {
    const [v, depth] = stack.pop()!;
    if (depth > max) {
      max = depth;
      if (max > limit) return limit + 1;
    }
    const children = Array.isArray(v) ? v : Object.values(v as Record<string, unknown>);
    for (const c of children) {
      if (typeof c === 'object' && c !== null) stack.push([c, depth + 1]);
    }
  }
  return max;
}

/**
 * Throws `nesting_too_deep` (terminal) when `value` nests deeper than `limit`; `what` names the
 * value and `setting` the configuration key of the limit, for the message.
 */
export function assertJsonDepth(
  value: unknown,
  limit: number,
  what: string,
  setting: string,
): void {
  if (jsonDepth(value, limit) > limit) {
    throw new ProtocolError(
      'nesting_too_deep',
      `${what}: nested deeper than ${limit} levels of objects and arrays (${setting})`,
      { details: { limit_depth: limit } },
    );
  }
}
