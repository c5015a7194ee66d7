// OpenAPI schema objects as the JSON Schema (draft 2020-12) a registry tool's parameters are:
// 3.0's own dialect is translated (`nullable` becomes a null type, boolean `exclusiveMinimum`
// a number, `example` an `examples` list), and keywords the registry's strict check would refuse
// (`xml`, `discriminator`, `externalDocs`, `x-*` extensions, formats ajv does not know) are
// dropped: they describe the payload to humans and generators, not what a valid call is.
// References are followed here, as the schema is read (refs.ts): `$ref` and `$dynamicRef` (with
// the resources entered so far as its dynamic scope); a reference back into a schema being read
// (a recursive schema) becomes "any", as does anything deeper than MAX_DEPTH. A `$ref` with other
// keywords beside it (3.1) is the referenced schema and those keywords (allOf). A reference to
// nothing throws UnresolvedRef: the operation that uses it is skipped with that reason.
import { UnresolvedRef, type Refs } from './refs.ts';

type Obj = Record<string, unknown>;

const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

/** Keywords whose value is one schema. */
const SUBSCHEMA = new Set([
  'items',
  'additionalProperties',
  'not',
  'if',
  'then',
  'else',
  'contains',
  'propertyNames',
  'unevaluatedProperties',
  'unevaluatedItems',
]);
/** Keywords whose value is a list of schemas. */
const SUBSCHEMA_LIST = new Set(['allOf', 'anyOf', 'oneOf', 'prefixItems']);
/** Keywords whose value maps names to schemas. */
const SUBSCHEMA_MAP = new Set(['properties', 'patternProperties', 'dependentSchemas']);
/** Keywords taken as they are. */
const PLAIN = new Set([
  'type',
  'enum',
  'const',
  'required',
  'minimum',
  'maximum',
  'exclusiveMinimum',
  'exclusiveMaximum',
  'multipleOf',
  'minLength',
  'maxLength',
  'pattern',
  'minItems',
  'maxItems',
  'uniqueItems',
  'minProperties',
  'maxProperties',
  'minContains',
  'maxContains',
  'dependentRequired',
  'description',
  'title',
  'default',
  'examples',
  'readOnly',
  'writeOnly',
  'deprecated',
  'contentMediaType',
  'contentEncoding',
]);
/** Formats the registry's validator knows (ajv-formats); others are dropped. */
const FORMATS = new Set([
  'date',
  'time',
  'date-time',
  'iso-time',
  'iso-date-time',
  'duration',
  'uri',
  'uri-reference',
  'uri-template',
  'url',
  'email',
  'hostname',
  'ipv4',
  'ipv6',
  'regex',
  'uuid',
  'json-pointer',
  'json-pointer-relative',
  'relative-json-pointer',
  'byte',
  'int32',
  'int64',
  'float',
  'double',
  'password',
  'binary',
]);

/** Deeper than this, a schema is cut to "any" (a dereferenced document can nest deeply). */
const MAX_DEPTH = 32;

/** Where a schema is read: the references, the base URI, the dynamic scope, what is open. */
export interface SchemaContext {
  refs: Refs;
  base: string;
  /** Resources entered, outermost first ($dynamicRef looks here). */
  scope: readonly string[];
  /** Schemas being read on the way here (a reference back to one is recursion). */
  open: ReadonlySet<object>;
}

/** Keywords that say where a schema is, not what it accepts. */
const IDENTITY = new Set([
  '$ref',
  '$dynamicRef',
  '$id',
  '$schema',
  '$anchor',
  '$dynamicAnchor',
  '$defs',
  'definitions',
  '$comment',
]);

function dynamicTarget(
  ctx: SchemaContext,
  ref: string,
): { node: unknown; base: string } | undefined {
  if (ref.startsWith('#') && !ref.startsWith('#/')) {
    for (const resource of ctx.scope) {
      const node = ctx.refs.dynamicAnchor(resource, ref.slice(1));
      if (node !== undefined) return { node, base: resource };
    }
  }
  return ctx.refs.resolve(ref, ctx.base);
}

export function toJsonSchema(schema: unknown, ctx?: SchemaContext, depth = 0): Obj {
  if (!isObj(schema) || depth > MAX_DEPTH) return {};
  const here = ctx && { ...ctx, base: ctx.refs.enter(schema, ctx.base) };
  if (here && typeof schema['$id'] === 'string' && here.scope.at(-1) !== here.base) {
    here.scope = [...here.scope, here.base];
  }
  const ref =
    typeof schema['$ref'] === 'string'
      ? schema['$ref']
      : typeof schema['$dynamicRef'] === 'string'
        ? schema['$dynamicRef']
        : undefined;
  if (ref !== undefined) {
    if (!here) return {};
    const target =
      typeof schema['$ref'] === 'string'
        ? here.refs.resolve(ref, here.base)
        : dynamicTarget(here, ref);
    if (!target) throw new UnresolvedRef(ref);
    let resolved: Obj = {};
    if (isObj(target.node) && !here.open.has(target.node)) {
      resolved = toJsonSchema(
        target.node,
        { ...here, base: target.base, open: new Set([...here.open, target.node]) },
        depth + 1,
      );
    } else if (typeof target.node === 'boolean') {
      resolved = target.node ? {} : { not: {} };
    }
    const rest = Object.fromEntries(Object.entries(schema).filter(([k]) => !IDENTITY.has(k)));
    if (Object.keys(rest).length === 0) return resolved;
    const own = toJsonSchema(rest, here, depth + 1);
    if (Object.keys(own).every((k) => k === 'description' || k === 'title')) {
      return { ...resolved, ...own };
    }
    return { allOf: [resolved, own] };
  }
  const sub = (v: unknown) => toJsonSchema(v, here, depth + 1);
  const out: Obj = {};
  for (const [k, v] of Object.entries(schema)) {
    if (SUBSCHEMA.has(k)) out[k] = typeof v === 'boolean' ? v : sub(v);
    else if (SUBSCHEMA_LIST.has(k) && Array.isArray(v))
      out[k] = v.map((s) => (typeof s === 'boolean' ? s : sub(s)));
    else if (SUBSCHEMA_MAP.has(k) && isObj(v))
      out[k] = Object.fromEntries(
        Object.entries(v).map(([name, s]) => [name, typeof s === 'boolean' ? s : sub(s)]),
      );
    else if (k === 'format') {
      if (typeof v === 'string' && FORMATS.has(v)) out[k] = v;
    } else if (k === 'example') {
      if (!('examples' in schema)) out['examples'] = [v];
    } else if (k === 'examples') {
      // 3.1 (JSON Schema) takes a list; 3.0 schemas have no `examples`, only `example`.
      if (Array.isArray(v)) out[k] = v;
    } else if (PLAIN.has(k)) out[k] = v;
  }
  // OpenAPI 3.0: a boolean exclusiveMinimum/Maximum qualifies minimum/maximum.
  for (const [flag, bound] of [
    ['exclusiveMinimum', 'minimum'],
    ['exclusiveMaximum', 'maximum'],
  ] as const) {
    if (typeof out[flag] === 'boolean') {
      if (out[flag] === true && typeof out[bound] === 'number') {
        out[flag] = out[bound];
        delete out[bound];
      } else delete out[flag];
    }
  }
  // OpenAPI 3.0: `nullable: true` is JSON Schema's null type.
  if (schema['nullable'] === true) {
    const t = out['type'];
    if (typeof t === 'string') out['type'] = [t, 'null'];
    else if (Array.isArray(t) && !t.includes('null')) out['type'] = [...(t as unknown[]), 'null'];
    if (Array.isArray(out['enum']) && !(out['enum'] as unknown[]).includes(null)) {
      out['enum'] = [...(out['enum'] as unknown[]), null];
    }
  }
  return out;
}
