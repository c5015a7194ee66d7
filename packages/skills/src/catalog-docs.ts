// The reserved tools' reference (docs/tools.md), rendered from the catalog itself: names,
// descriptions, hints and every argument with its type and limits come from the same schemas the
// api seeds and the skills service validates with, so the page cannot drift from the code.
// `pnpm docs:tools` writes it; a test fails when the committed page differs.
import { LONG_RUNNING_TOOLS, type CatalogTool, type JsonSchema } from './catalog.ts';
import { COMMON_ERRORS, INTERRUPTED, type ToolErrorCase } from './catalog-errors.ts';

type Schema = JsonSchema & {
  type?: string | string[];
  enum?: unknown[];
  const?: unknown;
  items?: Schema;
  properties?: Record<string, Schema>;
  required?: string[];
  anyOf?: Schema[];
  oneOf?: Schema[];
  description?: string;
  default?: unknown;
};

const cell = (text: string) => text.replace(/\|/g, '\\|').replace(/\n/g, ' ');
const code = (value: unknown) =>
  `\`${cell(typeof value === 'string' ? value : JSON.stringify(value))}\``;

function typeOf(s: Schema): string {
  if (s.const !== undefined) return code(s.const);
  if (s.enum) return s.enum.map(code).join(' \\| ');
  const alts = s.anyOf ?? s.oneOf;
  // Nested unions flattened, each type once: `object or null`, not `object or null or null`.
  if (alts) return [...new Set(alts.map(typeOf).flatMap((t) => t.split(' or ')))].join(' or ');
  if (s.type === 'array') return s.items ? `array of ${typeOf(s.items)}` : 'array';
  if (Array.isArray(s.type)) return s.type.join(' or ');
  return s.type ?? 'any';
}

const LIMITS: [key: string, label: string][] = [
  ['minLength', 'min length'],
  ['maxLength', 'max length'],
  ['minimum', 'min'],
  ['maximum', 'max'],
  ['minItems', 'min items'],
  ['maxItems', 'max items'],
  ['maxProperties', 'max keys'],
];

function limitsOf(s: Schema): string {
  const out: string[] = [];
  for (const [key, label] of LIMITS) {
    const v = s[key];
    if (typeof v === 'number') out.push(`${label} ${v}`);
  }
  if (s.default !== undefined) out.push(`default ${code(s.default)}`);
  const pattern = s['pattern'];
  if (typeof pattern === 'string' && pattern.length <= 40) out.push(`pattern ${code(pattern)}`);
  return out.join(', ');
}

function argumentsTable(t: CatalogTool): string[] {
  const schema = t.parameters as Schema;
  const props = schema.properties ?? {};
  const names = Object.keys(props);
  if (names.length === 0) {
    return [schema.description ? `Arguments: ${cell(schema.description)}.` : 'No arguments.'];
  }
  const required = new Set(schema.required ?? []);
  return [
    '| argument | type | required | limits | meaning |',
    '| --- | --- | --- | --- | --- |',
    ...names.map((name) => {
      const p = props[name] as Schema;
      return `| \`${name}\` | ${typeOf(p)} | ${required.has(name) ? 'yes' : 'no'} | ${limitsOf(p)} | ${cell(p.description ?? '')} |`;
    }),
  ];
}

interface ResultRow {
  type: string;
  always: boolean;
  meaning: string;
}

/** The object alternatives of a schema: itself, its nullable or union variants, array items. */
function objectsIn(s: Schema): Schema[] {
  const alts = s.anyOf ?? s.oneOf;
  if (alts) return alts.flatMap(objectsIn);
  if (s.type === 'array' && s.items) return objectsIn(s.items);
  return s.properties ? [s] : [];
}

/** A field's description; a nullable field keeps it on its non-null variant. */
const meaningOf = (s: Schema): string =>
  s.description ?? (s.anyOf ?? s.oneOf ?? []).map(meaningOf).find((d) => d !== '') ?? '';

/**
 * Every field of a result, nested ones as `parent.child` (`parent[].child` inside arrays). A
 * field of a union (an environment that is `ready` or `not_built`) is one row with every type it
 * takes, and not `always` unless every variant has it.
 */
function resultFields(s: Schema, prefix: string, rows: Map<string, ResultRow>): void {
  const variants = objectsIn(s);
  const inEvery = (name: string) => variants.every((v) => (v.required ?? []).includes(name));
  for (const obj of variants) {
    for (const [name, p] of Object.entries(obj.properties ?? {})) {
      const path = `${prefix}${name}`;
      const seen = rows.get(path);
      const type = typeOf(p);
      if (seen) {
        if (!seen.type.split(' or ').includes(type)) seen.type += ` or ${type}`;
      } else {
        rows.set(path, { type, always: inEvery(name), meaning: meaningOf(p) });
      }
      const inArray = p.type === 'array' || (p.anyOf ?? []).some((a) => a.type === 'array');
      resultFields(p, `${path}${inArray ? '[]' : ''}.`, rows);
    }
  }
}

function resultsTable(t: CatalogTool): string[] {
  const schema = t.resultSchema as Schema;
  const rows = new Map<string, ResultRow>();
  resultFields(schema, '', rows);
  if (rows.size === 0) return [`Result: ${cell(schema.description ?? typeOf(schema))}.`];
  return [
    'Result, on success:',
    '',
    '| field | type | always | meaning |',
    '| --- | --- | --- | --- |',
    ...[...rows].map(
      ([path, r]) =>
        `| \`${path}\` | ${r.type} | ${r.always ? 'yes' : 'no'} | ${cell(r.meaning)} |`,
    ),
  ];
}

const errorLine = (e: ToolErrorCase) => `- \`${e.code}\`: ${e.when}.`;

function errorList(t: CatalogTool): string[] {
  const common = [...COMMON_ERRORS, ...(t.idempotent ? [] : [INTERRUPTED])];
  const also = common.map((e) => `\`${e.code}\``).join(', ');
  if (t.errors.length === 0) {
    return [`Error codes: only those of any call, ${also} (see [Every call](#every-call)).`];
  }
  return [
    'Error codes:',
    '',
    ...t.errors.map(errorLine),
    `- and, as any call: ${also} (see [Every call](#every-call)).`,
  ];
}

function hints(t: CatalogTool): string {
  const a = t.annotations;
  const said = [
    a.readOnlyHint ? 'read-only' : 'changes state',
    a.destructiveHint ? 'destructive' : undefined,
    t.idempotent
      ? 'idempotent (run again after a takeover)'
      : 'not idempotent (`interrupted` after a takeover)',
    a.openWorldHint ? 'may reach the network' : undefined,
    LONG_RUNNING_TOOLS.has(t.name) ? 'long-running (MCP task support)' : undefined,
  ];
  return said.filter((x) => x !== undefined).join('; ');
}

/** The page as markdown (not yet formatted by prettier). */
export function renderToolReference(catalog: readonly CatalogTool[]): string {
  const lines = [
    '# Reserved tools',
    '',
    '<!-- Generated from the tool catalog (packages/skills/src/catalog.ts) by `pnpm docs:tools`; do not edit. -->',
    '',
    'Every project has these tools under reserved names. Their argument schemas are the ones the',
    'api seeds into the registry and the skills service validates with; their result tables are',
    'rendered from result schemas a test checks every tool against through the mesh. A failed',
    "call's card carries `error.code`; docs/protocol.md section 8 defines each code.",
    '',
    '## Every call',
    '',
    'Any call of a reserved tool may also end with:',
    '',
    ...COMMON_ERRORS.map(errorLine),
    `- ${errorLine(INTERRUPTED).slice(2)} Only tools marked not idempotent.`,
    '',
  ];
  for (const t of catalog) {
    lines.push(
      `## \`${t.name}\``,
      '',
      t.description,
      '',
      `_${hints(t)}._`,
      '',
      ...argumentsTable(t),
      '',
      ...resultsTable(t),
      '',
      ...errorList(t),
      '',
    );
  }
  return lines.join('\n');
}
