// What a registered tool is checked against before it enters the registry: its name (reserved
// targets), the JSON Schema of its parameters (compiled with ajv, draft 2020-12, regexes on RE2), its options.
import { z } from 'zod';
import { checkSchema, type SchemaCheck } from '@toolmesh/json-schema';
import {
  HttpSpec,
  ToolOptions as ToolOptionsShape,
  jsonDepth,
  urlPlaceholders,
} from '@toolmesh/protocol';
import { isReservedToolName } from '@toolmesh/skills';
import { ApiError } from '../errors.ts';

/** The parameters schema is sent to the model with every turn, so it is kept small. */
export const MAX_PARAMETERS_BYTES = 64 * 1024;

export const jsonBytes = (v: unknown): number => Buffer.byteLength(JSON.stringify(v), 'utf8');

/**
 * Targets no one may register besides the reserved `skills` and `builtin`: `sys` is the
 * control-plane component of the subject grammar (`cmd.sys.cancel`), and a tool under it would
 * read as a system command in subjects, logs and to the model. Compared without case, as the
 * skills package compares its reserved targets.
 */
const REFUSED_TARGETS: ReadonlySet<string> = new Set(['sys']);

/** Throws `reserved_name` for `skills.*`, `builtin.*` and `sys.*` (any case). */
export function assertRegistrable(name: string): void {
  const target = name.slice(0, name.indexOf('.'));
  if (isReservedToolName(name) || REFUSED_TARGETS.has(target.toLowerCase())) {
    throw new ApiError(
      'reserved_name',
      `tool name ${JSON.stringify(name)} uses the reserved target ${JSON.stringify(target)}: skills, builtin and sys are reserved`,
    );
  }
}

/**
 * Tool options: the deadline of a call that sets none (`timeout_ms`; the execution route sends
 * it with the call, capped by tools.max_timeout_ms) and, for tools the tools service runs, the
 * policies `rate_limit`, `retries` and `cost` (project-wide defaults in [tools]). One schema,
 * in the protocol package, for the api and the tools service.
 */
export const ToolOptions = ToolOptionsShape.meta({ id: 'ToolOptions' });

/** The request template of an `http` tool; see the protocol package. */
export const HttpToolSpec = HttpSpec.meta({ id: 'HttpToolSpec' });

/** Headers the HTTP client owns: framing, routing and the body's type. */
const RESERVED_HEADERS: ReadonlySet<string> = new Set([
  'host',
  'content-length',
  'content-type',
  'transfer-encoding',
  'connection',
  'keep-alive',
  'upgrade',
  'te',
  'trailer',
  'expect',
]);

/**
 * Checks an http template against the tool's parameters: every URL placeholder is a required
 * parameter, every `query` and `body` name is a parameter, and GET/DELETE send no body. A
 * template the service could not fill would fail every call; it is refused here instead.
 */
export function checkHttpSpec(spec: HttpSpec, parameters: Record<string, unknown>): void {
  const props = parameters['properties'];
  const known = new Set(typeof props === 'object' && props !== null ? Object.keys(props) : []);
  const required = new Set(
    Array.isArray(parameters['required']) ? (parameters['required'] as unknown[]) : [],
  );
  const issues: { path: string; message: string }[] = [];
  for (const p of urlPlaceholders(spec.url)) {
    if (!known.has(p) || !required.has(p)) {
      issues.push({
        path: '/http/url',
        message: `placeholder {${p}} must be a required parameter`,
      });
    }
  }
  for (const field of ['query', 'body'] as const) {
    for (const name of spec[field] ?? []) {
      if (!known.has(name)) {
        issues.push({ path: `/http/${field}`, message: `${name} is not a parameter` });
      }
    }
  }
  for (const name of Object.keys(spec.query_names ?? {})) {
    if (!(spec.query ?? []).includes(name)) {
      issues.push({ path: '/http/query_names', message: `${name} is not in query` });
    }
  }
  for (const h of Object.keys(spec.headers ?? {})) {
    const lower = h.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || (lower === 'authorization' && spec.auth)) {
      issues.push({ path: '/http/headers', message: `header ${h} is set by the tools service` });
    }
  }
  for (const [name, header] of Object.entries(spec.header_params ?? {})) {
    if (!known.has(name)) {
      issues.push({ path: '/http/header_params', message: `${name} is not a parameter` });
    }
    const lower = header.toLowerCase();
    if (RESERVED_HEADERS.has(lower) || (lower === 'authorization' && spec.auth)) {
      issues.push({
        path: '/http/header_params',
        message: `header ${header} is set by the tools service`,
      });
    }
  }
  if (spec.body_param !== undefined) {
    if (!known.has(spec.body_param)) {
      issues.push({ path: '/http/body_param', message: `${spec.body_param} is not a parameter` });
    }
    if (spec.body !== undefined) {
      issues.push({ path: '/http/body_param', message: 'body_param and body exclude each other' });
    }
  }
  if ((spec.method === 'GET' || spec.method === 'DELETE') && spec.body !== undefined) {
    issues.push({ path: '/http/body', message: `${spec.method} requests carry no body` });
  }
  const first = issues[0];
  if (first) {
    throw new ApiError('invalid_request', `http ${first.path.slice(6)}: ${first.message}`, {
      issues,
    });
  }
}

export const ParametersSchema = z
  .record(z.string(), z.unknown())
  .refine((s) => jsonBytes(s) <= MAX_PARAMETERS_BYTES, {
    message: `must be at most ${MAX_PARAMETERS_BYTES} bytes of JSON`,
  })
  .describe('JSON Schema (draft 2020-12) of the arguments; must be `type: "object"`');

/**
 * Compiles a parameters schema the way callers will validate arguments with it (strict mode:
 * unknown keywords and formats are errors; regexes on RE2, so a pattern with lookaround or a
 * backreference is refused here rather than run on a backtracking engine later). See
 * @toolmesh/json-schema for why each check uses its own ajv instance. No `loadSchema`, so a
 * remote `$ref` is an error, never a network fetch.
 */
export function checkParametersSchema(
  schema: Record<string, unknown>,
  /** tools.max_schema_depth: ajv and the expansion checks recurse over the schema. */
  maxDepth: number,
  field: 'parameters' | 'output_schema' = 'parameters',
  /** One checker for many schemas (an OpenAPI import's); a fresh one by default. */
  check: (schema: Record<string, unknown>) => SchemaCheck = checkSchema,
): void {
  if (jsonDepth(schema, maxDepth) > maxDepth) {
    throw new ApiError(
      'nesting_too_deep',
      `${field} nests deeper than ${maxDepth} levels of objects and arrays (tools.max_schema_depth)`,
      { field, limit_depth: maxDepth },
    );
  }
  const checked = check(schema);
  if (!checked.ok) {
    const what = {
      meta_schema: 'names an unsupported meta-schema',
      invalid: 'is not a valid JSON Schema',
      compile: 'does not compile',
    }[checked.reason];
    throw new ApiError('invalid_schema', `${field} ${what}: ${checked.message}`, {
      field,
      issues: checked.issues,
    });
  }
  if (schema['type'] !== 'object') {
    const why =
      field === 'parameters'
        ? 'tool arguments are a JSON object'
        : "MCP clients check a tool's structuredContent, a JSON object, against it";
    throw new ApiError(
      'invalid_schema',
      `${field} must be an object schema (\`"type": "object"\`): ${why}`,
      {
        field,
        issues: [{ path: '/type', keyword: 'type', message: 'must be "object"' }],
      },
    );
  }
}

/** MCP tool annotations: hints to clients about what a call does (MCP `ToolAnnotations`). */
export const ToolAnnotationsSchema = z
  .strictObject({
    readOnlyHint: z.boolean().optional().describe('the tool does not change its environment'),
    destructiveHint: z
      .boolean()
      .optional()
      .describe('a change it makes may destroy or overwrite (meaningful when not read-only)'),
    idempotentHint: z
      .boolean()
      .optional()
      .describe('calling it again with the same arguments has no further effect'),
    openWorldHint: z
      .boolean()
      .optional()
      .describe('it reaches outside the mesh (the web, other systems)'),
  })
  .describe('MCP tool annotations; a missing hint is unknown. Listed by the MCP facade');

export const OutputSchema = ParametersSchema.describe(
  'JSON Schema (draft 2020-12) of the structured result; must be `type: "object"`. MCP clients check the structuredContent of a call against it',
);
