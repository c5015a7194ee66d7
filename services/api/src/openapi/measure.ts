// What an OpenAPI document costs before anything expands it: its operations, and the size it
// would have once every internal `$ref` is replaced by what it points at. The converter reads the
// schemas of each operation with their references expanded, so a small document whose schemas each refer twice
// to the one before (`s20 -> s19, s19 -> ...`, 2.6 KiB) is 2^20 schemas to them: tens of seconds
// of CPU. Here each object is counted once with the size of its expansion (memoized, so the count
// itself is linear in the document) and the count stops at the limit. A `$ref` back into a
// schema being expanded (a recursive schema) counts once: the converter widens it to "any"

import type { Refs } from './refs.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null;

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;

/** Operations of the document as written (path items that are a `$ref` count as one each). */
export function countOperations(doc: Obj): number {
  const paths = doc['paths'];
  if (!isObj(paths) || Array.isArray(paths)) return 0;
  let n = 0;
  for (const item of Object.values(paths)) {
    if (!isObj(item)) continue;
    if (typeof item['$ref'] === 'string') n++;
    for (const m of METHODS) if (isObj(item[m])) n++;
  }
  return n;
}

/**
 * Objects and arrays the conversion expands, counted up to `limit` (then `limit + 1`): for each
 * operation, its parameters and request body (and its path's parameters) with every internal
 * `$ref` expanded, as the converter reads them one operation at a time. Responses, examples and
 * schemas no operation's input uses are never expanded, so they are not counted: a large
 * document whose responses refer to each other richly (Stripe's) is not refused for them.
 */
export function expandedSize(refs: Refs, limit: number): number {
  const memo = new Map<object, number>();
  const onStack = new Set<object>();
  const cost = (node: object): number => {
    const known = memo.get(node);
    if (known !== undefined) return known;
    if (onStack.has(node)) return 1;
    onStack.add(node);
    let total = 1;
    const ref = Array.isArray(node)
      ? undefined
      : ((node as Obj)['$ref'] ?? (node as Obj)['$dynamicRef']);
    if (typeof ref === 'string') {
      // A $dynamicRef counts what it names statically: the dynamic target is a schema of the
      // document too, counted where it is referred to.
      const target = refs.resolve(ref, refs.enter(node as Obj, refs.baseOf(node)));
      if (target && isObj(target.node)) total += cost(target.node);
    }
    const children = Array.isArray(node) ? node : Object.values(node);
    for (const c of children) {
      if (total > limit) break;
      if (isObj(c)) total += cost(c);
    }
    onStack.delete(node);
    const capped = Math.min(total, limit + 1);
    memo.set(node, capped);
    return capped;
  };
  const at = (node: unknown): unknown => {
    for (let i = 0; i < 16 && isObj(node) && typeof node['$ref'] === 'string'; i++) {
      node = refs.resolve(node['$ref'], refs.baseOf(node))?.node;
    }
    return node;
  };
  const paths = at(refs.root['paths']);
  if (!isObj(paths)) return 0;
  let total = 0;
  for (const written of Object.values(paths)) {
    const item = at(written);
    if (!isObj(item)) continue;
    const shared = isObj(item['parameters']) ? cost(item['parameters']) : 0;
    for (const m of METHODS) {
      const op = item[m];
      if (!isObj(op)) continue;
      total += 1 + shared;
      for (const input of [op['parameters'], op['requestBody']]) {
        if (isObj(input)) total += cost(input);
      }
      if (total > limit) return limit + 1;
    }
  }
  return total;
}
