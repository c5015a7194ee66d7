// SEP-2243 on a 2026-07-28 tools/call: an argument whose property in the tool's input schema
// names an `x-mcp-header` travels in an `Mcp-Param-<name>` header too, so that HTTP
// infrastructure can route on it. The mesh, as the server the client talks to, checks that the
// header is there and says what the body says (a `=?base64?...?=` value decoded first); a
// request that disagrees is refused before it runs, HTTP 400 with -32020 (HeaderMismatch).
// Only properties reached through `properties` keys are looked at, as the SEP allows.

export const HEADER_MISMATCH = -32020;
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const MAX_DEPTH = 8;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

function declarations(
  schema: unknown,
  path: string[] = [],
  out: { header: string; path: string[] }[] = [],
) {
  const props = isRecord(schema) ? schema['properties'] : undefined;
  if (!isRecord(props) || path.length >= MAX_DEPTH) return out;
  for (const [key, prop] of Object.entries(props)) {
    if (!isRecord(prop)) continue;
    const header = prop['x-mcp-header'];
    if (typeof header === 'string' && header !== '') out.push({ header, path: [...path, key] });
    declarations(prop, [...path, key], out);
  }
  return out;
}

function decode(value: string): string | undefined {
  if (!(value.startsWith('=?base64?') && value.endsWith('?='))) return value;
  const b64 = value.slice(9, -2);
  if (!BASE64.test(b64)) return undefined;
  return Buffer.from(b64, 'base64').toString('utf8');
}

/** Why the headers disagree with the arguments, or undefined when they agree. */
export function paramHeaderMismatch(
  inputSchema: unknown,
  args: unknown,
  headers: Headers,
): { message: string; header: string } | undefined {
  for (const d of declarations(inputSchema)) {
    let value: unknown = args;
    for (const key of d.path) value = isRecord(value) ? value[key] : undefined;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      continue;
    }
    const name = `Mcp-Param-${d.header}`;
    const sent = headers.get(name);
    const body = String(value);
    if (sent === null) {
      return {
        header: name,
        message: `the body carries ${d.path.join('.')} but ${name} is absent`,
      };
    }
    const decoded = decode(sent.trim());
    if (decoded === undefined) {
      return { header: name, message: `${name} carries an invalid Base64 value` };
    }
    if (decoded !== body) {
      return {
        header: name,
        message: `${name} says ${JSON.stringify(decoded)} but the body carries ${JSON.stringify(body)}`,
      };
    }
  }
  return undefined;
}
