// Internal references of an OpenAPI document, read as OpenAPI 3.1 (JSON Schema 2020-12) reads
// them: a schema with `$id` starts a resource of its own, and a `$ref` inside it resolves against
// that `$id` ("page" next to `$id: https://x/schemas/item-page` is https://x/schemas/page);
// `#name` is an `$anchor` or `$dynamicAnchor` of the resource; `$dynamicRef` takes the outermost
// `$dynamicAnchor` of its name along the resources entered to reach it (see schema.ts).
// Publishers also write `#/components/schemas/X` inside a schema with an `$id` and mean the
// document; a pointer that does not resolve in the resource is looked up in the document (it is
// what swagger-parser refuses as "Missing $ref pointer"). Nothing is fetched: a reference that
// leaves the document is reported as external, and refused by load.ts before anything resolves.

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null;

/** The base URI of the document itself (relative `$id`s resolve against it). */
export const DOCUMENT_BASE = 'https://openapi-document.invalid/';

export interface Resolved {
  node: unknown;
  /** The base URI in force at `node` (its resource's). */
  base: string;
}

export interface Refs {
  readonly root: Obj;
  /** What `ref` points at, read at `base`; undefined when it is not in the document. */
  resolve(ref: string, base: string): Resolved | undefined;
  /** The base URI of the resource that `node` is in (the document's unless under an `$id`). */
  baseOf(node: object): string;
  /** The base URI inside `node`: its own `$id` resolved against `base`, or `base`. */
  enter(node: Obj, base: string): string;
  /** The node of `$dynamicAnchor: name` in the resource `resource`, if it has one. */
  dynamicAnchor(resource: string, name: string): unknown;
  /** Whether `ref`, read at `base`, leaves the document (another file or a URL). */
  isExternal(ref: string, base: string): boolean;
}

function withoutFragment(url: URL): string {
  const u = new URL(url.href);
  u.hash = '';
  return u.href;
}

function pointer(root: unknown, fragment: string): unknown {
  if (fragment === '' || fragment === '/') return root;
  let cur: unknown = root;
  for (const raw of fragment.slice(1).split('/')) {
    const part = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (!isObj(cur)) return undefined;
    cur = Array.isArray(cur) ? cur[Number(part)] : cur[part];
  }
  return cur;
}

const toUrl = (ref: string, base: string): URL | undefined => {
  try {
    return new URL(ref, base);
  } catch {
    return undefined;
  }
};

/** Indexes the document's `$id`s and anchors (one walk, iterative: depth is checked before). */
export function indexRefs(root: Obj): Refs {
  const resources = new Map<string, Obj>([[DOCUMENT_BASE, root]]);
  const anchors = new Map<string, Obj>();
  const dynamic = new Map<string, Obj>();
  // Only nodes under an `$id` are recorded: most documents have none.
  const bases = new WeakMap<object, string>();
  const stack: [unknown, string][] = [[root, DOCUMENT_BASE]];
  while (stack.length > 0) {
    const [node, inherited] = stack.pop()!;
    if (!isObj(node)) continue;
    let base = inherited;
    if (!Array.isArray(node)) {
      const id = node['$id'];
      if (typeof id === 'string') {
        const url = toUrl(id, inherited);
        if (url) {
          base = withoutFragment(url);
          resources.set(base, node);
        }
      }
      for (const [key, map] of [
        ['$anchor', anchors],
        ['$dynamicAnchor', dynamic],
      ] as const) {
        const name = node[key];
        if (typeof name === 'string') {
          map.set(`${base}#${name}`, node);
          if (key === '$dynamicAnchor') anchors.set(`${base}#${name}`, node);
        }
      }
    }
    if (base !== DOCUMENT_BASE) bases.set(node, base);
    for (const child of Array.isArray(node) ? node : Object.values(node)) {
      if (isObj(child)) stack.push([child, base]);
    }
  }

  const refs: Refs = {
    root,
    resolve(ref, base) {
      const url = toUrl(ref, base);
      if (!url) return undefined;
      const resource = withoutFragment(url);
      const doc = resources.get(resource);
      if (!doc) return undefined;
      let fragment: string;
      try {
        fragment = decodeURIComponent(url.hash.slice(1));
      } catch {
        return undefined;
      }
      if (fragment === '') return { node: doc, base: resource };
      if (!fragment.startsWith('/')) {
        const node = anchors.get(`${resource}#${fragment}`);
        return node ? { node, base: resource } : undefined;
      }
      const node = pointer(doc, fragment);
      if (node !== undefined) return { node, base: isObj(node) ? refs.baseOf(node) : resource };
      if (doc !== root && ref.startsWith('#/')) {
        const inDocument = pointer(root, fragment);
        if (inDocument !== undefined) {
          return {
            node: inDocument,
            base: isObj(inDocument) ? refs.baseOf(inDocument) : DOCUMENT_BASE,
          };
        }
      }
      return undefined;
    },
    baseOf: (node) => bases.get(node) ?? DOCUMENT_BASE,
    enter(node, base) {
      const id = node['$id'];
      if (typeof id !== 'string') return base;
      const url = toUrl(id, base);
      return url ? withoutFragment(url) : base;
    },
    dynamicAnchor: (resource, name) => dynamic.get(`${resource}#${name}`),
    isExternal(ref, base) {
      if (ref.startsWith('#')) return false;
      const url = toUrl(ref, base);
      return !url || !resources.has(withoutFragment(url));
    },
  };
  return refs;
}

/** Follows a chain of `$ref`s of a non-schema object (a parameter, a request body, a path item). */
export function follow(refs: Refs, node: unknown, maxHops = 16): unknown {
  let cur = node;
  for (let i = 0; i < maxHops && isObj(cur) && typeof cur['$ref'] === 'string'; i++) {
    const ref = cur['$ref'];
    const target = refs.resolve(ref, refs.baseOf(cur));
    if (!target) throw new UnresolvedRef(ref);
    cur = target.node;
  }
  return cur;
}

export class UnresolvedRef extends Error {
  readonly ref: string;
  constructor(ref: string) {
    super(`$ref ${JSON.stringify(ref).slice(0, 300)} points at nothing in the document`);
    this.ref = ref;
  }
}
