// Every operation of a dereferenced OpenAPI document as an `http` registry tool:
// - the name is `<prefix>.<operationId>` (characters outside [A-Za-z0-9_-] become `_`; an
//   operation without an id is named after its method and path);
// - path, query and header parameters and the JSON request body (argument `body`) form one
//   object schema; the http template says where each argument goes;
// - the base URL is the operation's (or path's, or document's) first server, unless the caller
//   overrides it;
// - the first security requirement whose scheme the caller mapped to a project secret becomes
//   the template's auth (a secret of an oauth2 or openIdConnect scheme is sent as a bearer
//   token; an OAuth 2.0 config mapped to one makes the tools service get and refresh tokens,
//   with the requirement's scopes);
// - the description is the summary and the description;
// - the tool's version is the document's info.version, and an operation marked `deprecated`
//   makes a deprecated tool (hidden from lists unless asked for, still callable).
// - a parameter whose name an argument cannot have (`$.xgafv`, `page.token`) becomes an argument
//   of a name made of its characters, sent under its own name (query_names, header_params, or a
//   renamed placeholder); `{+name}` path templates (reserved expansion) are kept.
// An operation the http kind cannot run (a non-JSON body, a cookie, a method it does not send,
// a reference to nothing) is skipped with the reason, never imported half-working.
import { ID_PATTERN, type HttpAuth, type HttpSpec, type OAuth2Auth } from '@toolmesh/protocol';
import type { ImportedTool } from '@toolmesh/store';
import { ApiError } from '../errors.ts';
import { toJsonSchema, type SchemaContext } from './schema.ts';
import type { Loaded } from './load.ts';
import { DOCUMENT_BASE, UnresolvedRef, follow } from './refs.ts';

type Obj = Record<string, unknown>;
const isObj = (v: unknown): v is Obj => typeof v === 'object' && v !== null && !Array.isArray(v);

export interface ConvertOptions {
  prefix: string;
  /** Replaces the document's servers. */
  baseUrl?: string | undefined;
  /** Security scheme name -> project secret name, or an OAuth 2.0 config (oauth2 schemes). */
  security: Record<string, string | OAuth2Auth>;
  /** Operation ids or tags: only these (when given), and never those. */
  include?: string[] | undefined;
  exclude?: string[] | undefined;
  category: string;
  tags: string[];
}

export interface Skipped {
  operation: string;
  reason: string;
}

export interface Converted {
  tools: ImportedTool[];
  skipped: Skipped[];
  warnings: string[];
  /** Operations the filters left out. */
  filtered: number;
}

const METHODS = ['get', 'put', 'post', 'delete', 'options', 'head', 'patch', 'trace'] as const;
const RUNNABLE: Partial<Record<(typeof METHODS)[number], HttpSpec['method']>> = {
  get: 'GET',
  put: 'PUT',
  post: 'POST',
  delete: 'DELETE',
  patch: 'PATCH',
};
/** Header parameters OpenAPI says are ignored: the request's framing and auth own them. */
const IGNORED_HEADERS = new Set(['accept', 'content-type', 'authorization']);
const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const MAX_DESCRIPTION = 8_192;
const MAX_VERSION = 100;

const token = (s: string) =>
  s
    .replace(/[^A-Za-z0-9_-]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, 64);

const isJson = (mediaType: string) => /^application\/(?:[\w.+-]+\+)?json\b/i.test(mediaType);

/** A server's URL with its variables at their defaults; undefined when it is not absolute. */
function serverUrl(server: unknown): string | undefined {
  if (!isObj(server) || typeof server['url'] !== 'string') return undefined;
  const vars = isObj(server['variables']) ? server['variables'] : {};
  const url = server['url'].replace(/\{([^}]+)\}/g, (m, name: string) => {
    const v = vars[name];
    return isObj(v) && typeof v['default'] === 'string' ? v['default'] : m;
  });
  return /^https?:\/\/[^\s{}]+$/.test(url) ? url : undefined;
}

const OAUTH_SCHEMES = new Set(['oauth2', 'openIdConnect']);

function authFor(
  requirements: unknown,
  schemes: Obj,
  mapped: Record<string, string | OAuth2Auth>,
): { auth?: HttpAuth; missing?: string[] } {
  if (!Array.isArray(requirements) || requirements.length === 0) return {};
  const wanted: string[] = [];
  for (const req of requirements) {
    if (!isObj(req)) continue;
    const names = Object.keys(req);
    // `{}` among the alternatives: anonymous access is allowed.
    if (names.length === 0) return {};
    wanted.push(...names);
    if (names.length !== 1) continue;
    const name = names[0]!;
    const secret = mapped[name];
    const scheme = schemes[name];
    if (!secret || !isObj(scheme)) continue;
    const type = scheme['type'];
    if (typeof secret !== 'string') {
      // The tools service runs the grant; the requirement's scopes are asked for unless the
      // config names its own.
      const scopes = req[name];
      const scope =
        Array.isArray(scopes) && scopes.length > 0 ? scopes.map(String).join(' ') : undefined;
      return { auth: { ...(scope ? { scope } : {}), ...secret } };
    }
    if (type === 'http' && String(scheme['scheme']).toLowerCase() === 'bearer')
      return { auth: { type: 'bearer', secret } };
    if (type === 'http' && String(scheme['scheme']).toLowerCase() === 'basic')
      return { auth: { type: 'basic', secret } };
    if (type === 'oauth2' || type === 'openIdConnect') return { auth: { type: 'bearer', secret } };
    if (
      type === 'apiKey' &&
      scheme['in'] === 'header' &&
      typeof scheme['name'] === 'string' &&
      HEADER_NAME.test(scheme['name'])
    )
      return { auth: { type: 'header', header: scheme['name'], secret } };
  }
  return { missing: [...new Set(wanted)] };
}

function describe(op: Obj, method: string, path: string): string {
  const parts = [op['summary'], op['description']]
    .filter((s): s is string => typeof s === 'string' && s.trim() !== '')
    .map((s) => s.trim());
  const text = parts.length > 0 ? parts.join('\n\n') : `${method.toUpperCase()} ${path}`;
  return text.length > MAX_DESCRIPTION ? `${text.slice(0, MAX_DESCRIPTION - 1)}…` : text;
}

class Skip extends Error {}

export function convertOpenApi(loaded: Loaded, o: ConvertOptions): Converted {
  const out: Converted = { tools: [], skipped: [], warnings: [...loaded.warnings], filtered: 0 };
  const { refs } = loaded;
  const root = loaded.doc as unknown as Obj;
  const schemaAt = (schema: unknown, holder: object): Obj => {
    const base = refs.baseOf(holder);
    const ctx: SchemaContext = {
      refs,
      base,
      scope: base === DOCUMENT_BASE ? [DOCUMENT_BASE] : [DOCUMENT_BASE, base],
      open: new Set(),
    };
    return toJsonSchema(schema, ctx);
  };
  const deref = (node: unknown): unknown => {
    try {
      return follow(refs, node);
    } catch (err) {
      if (err instanceof UnresolvedRef) throw new Skip(err.message);
      throw err;
    }
  };
  const components = isObj(root['components']) ? root['components'] : {};
  const schemes = isObj(components['securitySchemes']) ? components['securitySchemes'] : {};
  for (const [scheme, value] of Object.entries(o.security)) {
    const declared = schemes[scheme];
    if (!isObj(declared)) {
      out.warnings.push(`security scheme ${scheme} is not in the document's securitySchemes`);
    } else if (typeof value !== 'string' && !OAUTH_SCHEMES.has(String(declared['type']))) {
      throw new ApiError(
        'invalid_request',
        `security scheme ${scheme} is of type ${String(declared['type'])}: an OAuth 2.0 config maps only an oauth2 or openIdConnect scheme; map it to a project secret`,
        { scheme, type: declared['type'] },
      );
    }
  }
  const include = o.include && o.include.length > 0 ? new Set(o.include) : undefined;
  const exclude = new Set(o.exclude ?? []);
  const taken = new Set<string>();
  const unmapped = new Set<string>();
  const paths = isObj(root['paths']) ? root['paths'] : {};
  const info = isObj(root['info']) ? root['info'] : {};
  const version =
    typeof info['version'] === 'string' && info['version'].trim() !== ''
      ? info['version'].trim().slice(0, MAX_VERSION)
      : null;

  for (const [path, written] of Object.entries(paths)) {
    let item: unknown;
    try {
      item = deref(written);
    } catch (err) {
      if (!(err instanceof Skip)) throw err;
      out.skipped.push({ operation: path, reason: err.message });
      continue;
    }
    if (!isObj(item)) continue;
    for (const method of METHODS) {
      const op = item[method];
      if (!isObj(op)) continue;
      const opId = typeof op['operationId'] === 'string' ? op['operationId'] : undefined;
      const label = opId ?? `${method.toUpperCase()} ${path}`;
      const opTags = Array.isArray(op['tags'])
        ? op['tags'].filter((t): t is string => typeof t === 'string')
        : [];
      const keys = [label, ...opTags];
      if ((include && !keys.some((k) => include.has(k))) || keys.some((k) => exclude.has(k))) {
        out.filtered++;
        continue;
      }
      try {
        out.tools.push(operationTool(path, item, method, op, opId, opTags));
      } catch (err) {
        if (err instanceof Skip || err instanceof UnresolvedRef) {
          out.skipped.push({ operation: label, reason: err.message });
        } else throw err;
      }
    }
  }
  if (unmapped.size > 0) {
    out.warnings.push(
      `operations that need security scheme(s) ${[...unmapped].join(', ')} were imported without auth: map a scheme to a project secret with \`security\``,
    );
  }
  return out;

  function operationTool(
    path: string,
    item: Obj,
    method: (typeof METHODS)[number],
    op: Obj,
    opId: string | undefined,
    opTags: string[],
  ): ImportedTool {
    const httpMethod = RUNNABLE[method];
    if (!httpMethod) throw new Skip(`the http kind does not send ${method.toUpperCase()} requests`);

    let base = o.baseUrl;
    if (!base) {
      const servers = [op['servers'], item['servers'], root['servers']].find(
        (s) => Array.isArray(s) && s.length > 0,
      ) as unknown[] | undefined;
      base = servers ? serverUrl(servers[0]) : undefined;
      if (!base) {
        throw new Skip(
          'no absolute http(s) server URL in the document for this operation: give base_url',
        );
      }
    }

    // Path-level parameters apply unless the operation redefines the same name and location.
    const params = new Map<string, Obj>();
    for (const list of [item['parameters'], op['parameters']]) {
      if (!Array.isArray(list)) continue;
      for (const written of list) {
        const p = deref(written);
        if (isObj(p) && typeof p['name'] === 'string')
          params.set(`${String(p['in'])}:${p['name']}`, p);
      }
    }
    const properties: Obj = {};
    const required: string[] = [];
    const query: string[] = [];
    const queryNames: Record<string, string> = {};
    const headerParams: Record<string, string> = {};
    /** Path placeholder as written -> the argument that fills it. */
    const pathArgs = new Map<string, string>();
    const add = (name: string, schema: Obj, isRequired: boolean) => {
      if (name in properties) throw new Skip(`two parameters are named ${name}`);
      properties[name] = schema;
      if (isRequired) required.push(name);
    };
    /** The argument of a parameter: its name, or one made of its characters when it cannot be. */
    const argumentName = (name: string): string => {
      if (ID_PATTERN.test(name)) return name;
      const stem = token(name) || 'param';
      let candidate = stem;
      for (let i = 2; candidate in properties || params.has(`query:${candidate}`); i++) {
        candidate = `${stem}_${i}`;
      }
      return candidate;
    };
    for (const p of params.values()) {
      const name = p['name'] as string;
      const where = p['in'];
      if (where === 'header' && IGNORED_HEADERS.has(name.toLowerCase())) continue;
      if (where === 'cookie') {
        if (p['required'] === true) throw new Skip(`cookie parameter ${name} is not supported`);
        continue;
      }
      let raw = p['schema'];
      if (raw === undefined && isObj(p['content'])) raw = Object.values(p['content'])[0];
      if (isObj(raw) && 'schema' in raw && !('type' in raw)) raw = raw['schema'];
      const schema = schemaAt(raw, p);
      if (typeof p['description'] === 'string' && schema['description'] === undefined) {
        schema['description'] = p['description'];
      }
      const arg = argumentName(name);
      add(arg, schema, where === 'path' || p['required'] === true);
      if (where === 'query') {
        query.push(arg);
        if (arg !== name) queryNames[arg] = name;
      } else if (where === 'header') {
        if (!HEADER_NAME.test(name)) throw new Skip(`header ${name} is not a valid header name`);
        headerParams[arg] = name;
      } else if (where === 'path') pathArgs.set(name, arg);
      else throw new Skip(`parameter location ${String(where)} is unknown`);
    }

    let bodyParam: string | undefined;
    const body = deref(op['requestBody']);
    if (isObj(body)) {
      const content = isObj(body['content']) ? body['content'] : {};
      const json = Object.keys(content).find(isJson);
      if (json) {
        bodyParam = 'body' in properties ? 'request_body' : 'body';
        const media = content[json];
        const schema = schemaAt(isObj(media) ? media['schema'] : undefined, body);
        if (typeof body['description'] === 'string' && schema['description'] === undefined) {
          schema['description'] = body['description'];
        }
        add(bodyParam, schema, body['required'] === true);
      } else if (Object.keys(content).length > 0) {
        // Even an optional body is what such an operation is for (an upload): without it the
        // tool would run half of the operation.
        throw new Skip(
          `request body media type ${Object.keys(content).join(', ') || '(none)'} is not supported: JSON only`,
        );
      }
    }

    // `{name}` and RFC 6570's `{+name}` (reserved expansion: the value's slashes are kept);
    // a placeholder is renamed to its argument when the parameter's name cannot be one.
    const template = path.replace(/\{([^}]*)\}/g, (_, written: string) => {
      const plus = written.startsWith('+') ? '+' : '';
      const name = plus ? written.slice(1) : written;
      const arg = pathArgs.get(name);
      if (arg === undefined) {
        throw new Skip(`path placeholder {${written}} is not a declared path parameter`);
      }
      return `{${plus}${arg}}`;
    });

    const rootSecurity = root['security'];
    const { auth, missing } = authFor(op['security'] ?? rootSecurity, schemes, o.security);
    for (const m of missing ?? []) unmapped.add(m);

    const name = uniqueName(opId ? token(opId) : token(`${method}_${path}`));
    const spec: HttpSpec = {
      method: httpMethod,
      url: `${base.replace(/\/+$/, '')}${template.startsWith('/') ? template : `/${template}`}`,
      ...(query.length > 0 ? { query } : {}),
      ...(Object.keys(queryNames).length > 0 ? { query_names: queryNames } : {}),
      ...(Object.keys(headerParams).length > 0 ? { header_params: headerParams } : {}),
      ...(bodyParam ? { body_param: bodyParam } : {}),
      ...(auth ? { auth } : {}),
    };
    const tags = [...new Set([...o.tags, ...opTags.map(token).filter((t) => t !== '')])].slice(
      0,
      32,
    );
    return {
      name,
      description: describe(op, method, path),
      category: o.category,
      tags,
      parameters: {
        type: 'object',
        properties,
        ...(required.length > 0 ? { required } : {}),
        additionalProperties: false,
      },
      spec,
      annotations: {
        ...(httpMethod === 'GET' ? { readOnlyHint: true } : {}),
        ...(httpMethod === 'DELETE' ? { destructiveHint: true } : {}),
        ...(httpMethod === 'GET' || httpMethod === 'PUT' || httpMethod === 'DELETE'
          ? { idempotentHint: true }
          : {}),
        openWorldHint: true,
      },
      options: {},
      version,
      deprecated: op['deprecated'] === true,
    };
  }

  function uniqueName(base: string): string {
    const stem = (base || 'operation').slice(0, 60);
    let candidate = stem;
    for (let i = 2; taken.has(candidate); i++) candidate = `${stem}_${i}`;
    taken.add(candidate);
    return `${o.prefix}.${candidate}`;
  }
}
