// How many subschemas one value of the instance can make a validator evaluate. A `$ref` is a
// function call in ajv's generated code, so a chain of `$defs` each referring twice to the one
// before (`a1: {allOf: [a0, a0]}`, `a2: {allOf: [a1, a1]}`, ...) costs 2^n calls per value: a
// 4 KB schema that blocks the event loop for hours. Here the schema paths from the root are
// counted through every applicator and resolved `$ref` (memoized, so the count itself is
// linear), and a schema over the limit is refused. A reference back into a schema being
// expanded (recursion over nested data) counts once: its cost depends on the data's depth.
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
