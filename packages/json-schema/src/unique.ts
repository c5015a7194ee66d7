// `uniqueItems` in linear time. ajv compares items pairwise (deep equality for anything that is
// not a scalar of one declared type): O(n²), so a 1 MB array of `[0]`s against a tenant's
// `{"type": "array", "uniqueItems": true}` blocks the event loop for minutes. Here each item
// is written in a canonical form (object keys sorted; JSON numbers 1 and 1.0 are one value, as
// JSON Schema says) and looked up in a Set: time linear in the size of the array.
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { SchemaValidateFunction } from 'ajv/dist/types/index.js';

/** Deeper than this, items are not compared (and the array is refused): no stack overflow. */
const MAX_DEPTH = 512;

class TooDeep extends Error {}

function canonical(v: unknown, depth: number): string {
  if (depth > MAX_DEPTH) throw new TooDeep();
  if (Array.isArray(v)) return `[${v.map((x: unknown) => canonical(x, depth + 1)).join(',')}]`;
  if (typeof v === 'object' && v !== null) {
    const o = v as Record<string, unknown>;
    return `{${Object.keys(o)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonical(o[k], depth + 1)}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** Replaces ajv's `uniqueItems` with the linear-time check above. */
export function useLinearUniqueItems(ajv: Ajv2020): void {
  ajv.removeKeyword('uniqueItems');
  const validate: SchemaValidateFunction = (schema: unknown, data: unknown) => {
    if (schema !== true || !Array.isArray(data) || data.length < 2) return true;
    const seen = new Map<string, number>();
    try {
      for (let i = 0; i < data.length; i++) {
        const key = canonical(data[i], 0);
        const j = seen.get(key);
        if (j !== undefined) {
          validate.errors = [
            {
              keyword: 'uniqueItems',
              params: { i, j },
              message: `must NOT have duplicate items (items ${j} and ${i} are identical)`,
            },
          ];
          return false;
        }
        seen.set(key, i);
      }
    } catch (err) {
      if (!(err instanceof TooDeep)) throw err;
      validate.errors = [
        {
          keyword: 'uniqueItems',
          params: { max_depth: MAX_DEPTH },
          message: `items nested deeper than ${MAX_DEPTH} levels cannot be compared`,
        },
      ];
      return false;
    }
    return true;
  };
  ajv.addKeyword({
    keyword: 'uniqueItems',
    type: 'array',
    schemaType: 'boolean',
    errors: true,
    validate,
  });
}
