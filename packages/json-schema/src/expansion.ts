// How many subschemas one value of the instance can make a validator evaluate. A `$ref` is a
// function call in ajv's generated code, so a chain of `$defs` each referring twice to the one
// before (`a1: {allOf: [a0, a0]}`, `a2: {allOf: [a1, a1]}`, ...) costs 2^n calls per value: a
// 4 KB schema that blocks the event loop for hours. Here the schema paths from the root are
// counted through every applicator and resolved `$ref` (memoized, so the count itself is
// linear), and a schema over the limit is refused. A reference back into a schema being
// expanded (recursion over nested data) counts once: its cost depends on the data's depth, and
// branchingRecursion (below) refuses the recursions whose cost doubles with each level.
export const MAX_EXPANSION = 20_000;

const SCHEMA_VALUED = [
  'not',
  'if',
  'then',
  'else',
  'items',
  'contains',
  'additionalProperties',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
  'contentSchema',
  'additionalItems',
] as const;
const SCHEMA_ARRAYS = ['allOf', 'anyOf', 'oneOf', 'prefixItems'] as const;
const SCHEMA_MAPS = ['properties', 'patternProperties', 'dependentSchemas'] as const;
/** Where subschemas live that are only reached through `$ref`. */
const DEFINITIONS = ['$defs', 'definitions'] as const;

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

const DEFAULT_BASE = 'https://toolmesh.invalid/schema.json';

function resolveUrl(ref: string, base: string): string | undefined {
  try {
    return new URL(ref, base).href;
  } catch {
    return undefined;
  }
}

const stripFragment = (url: string) => url.split('#')[0]!;

/** Every (sub)schema with the base URI it is read against, and where `$id`s and anchors lead. */
function index(root: Obj) {
  const bases = new Map<Obj, string>();
  const byUrl = new Map<string, Obj>();
  const visit = (s: unknown, base: string) => {
    if (!isObj(s) || bases.has(s)) return;
    const id = typeof s['$id'] === 'string' ? resolveUrl(s['$id'], base) : undefined;
    const here = id ?? base;
    bases.set(s, here);
    if (id) byUrl.set(stripFragment(id), s);
    if (typeof s['$anchor'] === 'string') byUrl.set(`${stripFragment(here)}#${s['$anchor']}`, s);
    for (const child of children(s)) visit(child, here);
    for (const k of DEFINITIONS) {
      const defs = s[k];
      if (isObj(defs)) for (const d of Object.values(defs)) visit(d, here);
    }
  };
  const rootBase =
    typeof root['$id'] === 'string'
      ? (resolveUrl(root['$id'], DEFAULT_BASE) ?? DEFAULT_BASE)
      : DEFAULT_BASE;
  byUrl.set(stripFragment(rootBase), root);
  visit(root, rootBase);
  return { bases, byUrl };
}

/** The subschemas a validator may evaluate for (parts of) the same value, `$ref` aside. */
function children(s: Obj): unknown[] {
  const out: unknown[] = [];
  for (const k of SCHEMA_VALUED) if (s[k] !== undefined) out.push(s[k]);
  for (const k of SCHEMA_ARRAYS) if (Array.isArray(s[k])) out.push(...(s[k] as unknown[]));
  for (const k of SCHEMA_MAPS) if (isObj(s[k])) out.push(...Object.values(s[k]));
  // draft 2019 array form of items
  if (Array.isArray(s['items'])) out.push(...(s['items'] as unknown[]));
  return out;
}

function pointer(doc: Obj, fragment: string): unknown {
  if (fragment === '' || fragment === '/') return doc;
  let cur: unknown = doc;
  for (const raw of fragment.slice(1).split('/')) {
    const part = decodeURIComponent(raw).replace(/~1/g, '/').replace(/~0/g, '~');
    if (Array.isArray(cur)) cur = cur[Number(part)];
    else if (isObj(cur)) cur = cur[part];
    else return undefined;
  }
  return cur;
}

/** The number of schema paths from the root, counted up to `limit` (then `limit + 1`). */
export function schemaExpansion(root: Obj, limit = MAX_EXPANSION): number {
  const { bases, byUrl } = index(root);
  const memo = new Map<Obj, number>();
  const onStack = new Set<Obj>();

  const target = (s: Obj, ref: string): Obj | undefined => {
    const url = resolveUrl(ref, bases.get(s) ?? DEFAULT_BASE);
    if (!url) return undefined;
    const hash = url.indexOf('#');
    const fragment = hash < 0 ? '' : url.slice(hash + 1);
    if (fragment !== '' && !fragment.startsWith('/')) {
      const anchored = byUrl.get(url);
      return anchored;
    }
    const doc = byUrl.get(stripFragment(url));
    if (!doc) return undefined;
    const t = pointer(doc, decodeURIComponent(fragment));
    return isObj(t) ? t : undefined;
  };

  const cost = (s: unknown): number => {
    if (!isObj(s)) return 1;
    const known = memo.get(s);
    if (known !== undefined) return known;
    if (onStack.has(s)) return 1;
    onStack.add(s);
    let total = 1;
    const refs = [s['$ref'], s['$dynamicRef']].filter((r): r is string => typeof r === 'string');
    for (const ref of refs) {
      const t = target(s, ref);
      total += t ? cost(t) : 1;
      if (total > limit) break;
    }
    for (const child of children(s)) {
      if (total > limit) break;
      total += cost(child);
    }
    onStack.delete(s);
    const capped = Math.min(total, limit + 1);
    memo.set(s, capped);
    return capped;
  };
  return cost(root);
}

/**
 * One step of a schema path and where it moves in the value: `''` stays on the same value,
 * `.name` goes to a property, `.*` to some property, `#3` to an item, `#*` to some item.
 */
function edges(s: Obj, ref: (r: string) => Obj | undefined): { to: unknown; step: string }[] {
  const out: { to: unknown; step: string }[] = [];
  for (const r of [s['$ref'], s['$dynamicRef']]) {
    if (typeof r === 'string') out.push({ to: ref(r), step: '' });
  }
  for (const k of ['not', 'if', 'then', 'else'] as const) {
    if (s[k] !== undefined) out.push({ to: s[k], step: '' });
  }
  for (const k of ['allOf', 'anyOf', 'oneOf'] as const) {
    if (Array.isArray(s[k])) for (const c of s[k] as unknown[]) out.push({ to: c, step: '' });
  }
  if (isObj(s['dependentSchemas'])) {
    for (const c of Object.values(s['dependentSchemas'])) out.push({ to: c, step: '' });
  }
  if (isObj(s['properties'])) {
    for (const [k, c] of Object.entries(s['properties'])) out.push({ to: c, step: `.${k}` });
  }
  if (isObj(s['patternProperties'])) {
    for (const c of Object.values(s['patternProperties'])) out.push({ to: c, step: '.*' });
  }
  for (const k of ['additionalProperties', 'unevaluatedProperties'] as const) {
    if (s[k] !== undefined) out.push({ to: s[k], step: '.*' });
  }
  if (Array.isArray(s['prefixItems'])) {
    (s['prefixItems'] as unknown[]).forEach((c, i) => out.push({ to: c, step: `#${i}` }));
  }
  if (Array.isArray(s['items'])) {
    (s['items'] as unknown[]).forEach((c, i) => out.push({ to: c, step: `#${i}` }));
  } else if (s['items'] !== undefined) out.push({ to: s['items'], step: '#*' });
  for (const k of ['contains', 'unevaluatedItems', 'additionalItems'] as const) {
    if (s[k] !== undefined) out.push({ to: s[k], step: '#*' });
  }
  return out;
}

/** Whether two relative value paths may name the same value (`*` matches any of its kind). */
function overlap(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  return a.every((x, i) => {
    const y = b[i]!;
    if (x === y) return true;
    if (x[0] !== y[0]) return false;
    return x.slice(1) === '*' || y.slice(1) === '*';
  });
}

/** Steps explored in total before a schema counts as too complex to check. */
const MAX_RECURSION_STEPS = 100_000;

/**
 * Why a recursive schema costs time exponential in the depth of the data, or undefined: a
 * schema that refers back to itself along two paths that may reach the same value
 * (`{anyOf: [{properties: {a: {$ref: "#"}}}, {properties: {a: {$ref: "#"}}}]}` against
 * `{"a": {"a": ...}}` doubles the work at every level). A tree whose children are different
 * values (`left`, `right`; `items` and `additionalProperties`) is fine.
 */
export function branchingRecursion(root: Obj): string | undefined {
  const { bases, byUrl } = index(root);
  const resolver = (from: Obj) => (ref: string) => {
    const url = resolveUrl(ref, bases.get(from) ?? DEFAULT_BASE);
    if (!url) return undefined;
    const hash = url.indexOf('#');
    const fragment = hash < 0 ? '' : url.slice(hash + 1);
    if (fragment !== '' && !fragment.startsWith('/')) return byUrl.get(url);
    const doc = byUrl.get(stripFragment(url));
    const t = doc ? pointer(doc, decodeURIComponent(fragment)) : undefined;
    return isObj(t) ? t : undefined;
  };
  // Only schemas a $ref leads to can recur.
  const targets = new Set<Obj>();
  for (const s of bases.keys()) {
    for (const r of [s['$ref'], s['$dynamicRef']]) {
      const t = typeof r === 'string' ? resolver(s)(r) : undefined;
      if (t) targets.add(t);
    }
  }
  /** Whether `start` can reach itself (plain reachability, linear). */
  const recurs = (start: Obj): boolean => {
    const seen = new Set<Obj>();
    const stack: Obj[] = [start];
    while (stack.length > 0) {
      const s = stack.pop()!;
      for (const e of edges(s, resolver(s))) {
        if (!isObj(e.to)) continue;
        if (e.to === start) return true;
        if (!seen.has(e.to)) {
          seen.add(e.to);
          stack.push(e.to);
        }
      }
    }
    return false;
  };
  let steps = 0;
  for (const start of targets) {
    if (!recurs(start)) continue;
    const returns: string[][] = [];
    const onPath = new Set<Obj>();
    const walk = (s: Obj, path: string[]): boolean => {
      if (++steps > MAX_RECURSION_STEPS) return false;
      onPath.add(s);
      for (const e of edges(s, resolver(s))) {
        if (!isObj(e.to)) continue;
        const next = e.step === '' ? path : [...path, e.step];
        if (e.to === start) {
          returns.push(next);
          continue;
        }
        if (onPath.has(e.to)) continue;
        if (!walk(e.to, next)) return false;
      }
      onPath.delete(s);
      return true;
    };
    if (!walk(start, [])) return 'the schema is too complex to check for recursion that branches';
    for (let i = 0; i < returns.length; i++) {
      for (let j = i + 1; j < returns.length; j++) {
        if (overlap(returns[i]!, returns[j]!)) {
          const at = returns[i]!.join('') || '(the same value)';
          return `a recursive part of the schema refers back to itself twice for one value (at ${at}): its cost doubles with every level of the data`;
        }
      }
    }
  }
  return undefined;
}
