// The reserved tools' reference (docs/tools.md), rendered from the catalog itself: names,
// descriptions, hints and every argument with its type and limits come from the same schemas the
// api seeds and the skills service validates with, so the page cannot drift from the code.
// `pnpm docs:tools` writes it; a test fails when the committed page differs.
import { LONG_RUNNING_TOOLS, type CatalogTool, type JsonSchema } from './catalog.ts';

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
  if (alts) return alts.map(typeOf).join(' or ');
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
    'api seeds into the registry and the skills service validates with. Results and error codes',
    'are described in docs/protocol.md: the codes in section 8 (`busy`, `oom`, `cpu_limit` and the',
    'dependency codes name the skills tools they come from), skills.* in sections 25 (exposed',
    'ports) and 27 (skill environments), builtin.* in sections 14 and 24.',
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
    );
  }
  return lines.join('\n');
}
