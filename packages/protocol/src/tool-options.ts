// What a registry tool carries besides its parameters, shared by the api (which checks it when
// a tool is registered) and the tools service (which reads it on every call): the policies in
// `options`, and the request template of an `http` tool. Pure schemas, no I/O.
import { z } from 'zod';
import { ID_PATTERN } from './ids.ts';

const secretName = z
  .string()
  .regex(ID_PATTERN, 'must be a secret name: 1-64 characters of [A-Za-z0-9_-]');

export const RateLimitOptions = z
  .strictObject({
    per_minute: z.number().positive().max(1_000_000).describe('tokens added per minute'),
    burst: z.int().min(1).max(100_000).optional().describe('bucket size (config default)'),
    max_wait_ms: z
      .int()
      .min(0)
      .max(600_000)
      .optional()
      .describe('how long a call waits for a token before it fails rate_limited'),
  })
  .describe('a token bucket shared by every tools-service instance');
export type RateLimitOptions = z.infer<typeof RateLimitOptions>;

export const RetryOptions = z
  .strictObject({
    max: z.int().min(0).max(10).describe('retries after the first attempt'),
    base_ms: z.int().min(1).max(60_000).optional(),
    max_ms: z.int().min(1).max(600_000).optional(),
  })
  .describe('retries of upstream 429/502/503/504 and connection resets, honouring Retry-After');
export type RetryOptions = z.infer<typeof RetryOptions>;

export const CostOptions = z
  .strictObject({
    per_call: z.number().min(0).default(0),
    per_second: z.number().min(0).default(0),
    currency: z
      .string()
      .regex(/^[A-Za-z0-9_-]{1,16}$/)
      .default('USD'),
  })
  .describe('cost estimate: per_call + per_second x duration, on the execution and the card');
export type CostOptions = z.infer<typeof CostOptions>;

export const ToolOptions = z.strictObject({
  timeout_ms: z
    .int()
    .min(1)
    .max(3_600_000)
    .optional()
    .describe('default deadline of a call to this tool (bounds retries too), 1 ms to 1 h'),
  rate_limit: RateLimitOptions.optional(),
  retries: RetryOptions.optional(),
  cost: CostOptions.optional(),
  idempotent: z
    .boolean()
    .optional()
    .describe(
      'whether a second run is harmless; false: a call whose instance died mid-run ends interrupted instead of running again (default: true for http GET/PUT/DELETE, false otherwise)',
    ),
});
export type ToolOptions = z.infer<typeof ToolOptions>;

export const HttpMethod = {
  GET: 'GET',
  POST: 'POST',
  PUT: 'PUT',
  PATCH: 'PATCH',
  DELETE: 'DELETE',
} as const;
export type HttpMethod = (typeof HttpMethod)[keyof typeof HttpMethod];

export const HttpAuthType = { bearer: 'bearer', header: 'header', basic: 'basic' } as const;
export type HttpAuthType = (typeof HttpAuthType)[keyof typeof HttpAuthType];

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const headerName = z.string().regex(HEADER_NAME, 'must be an HTTP header name');

export const HttpAuth = z
  .strictObject({
    type: z.enum(HttpAuthType),
    secret: secretName.describe('a project secret (PUT /v1/projects/:p/secrets/:name)'),
    header: headerName.optional().describe('the header of type "header", e.g. X-API-Key'),
  })
  .refine((a) => (a.type === 'header') === (a.header !== undefined), {
    message: 'header is required for type "header" and only allowed there',
    path: ['header'],
  })
  .describe('bearer: Authorization: Bearer <secret>; basic: the secret is user:password');
export type HttpAuth = z.infer<typeof HttpAuth>;

/** `{name}` placeholders of a URL template. */
export const URL_PLACEHOLDER = /\{([A-Za-z0-9_-]{1,64})\}/g;

export const HttpSpec = z.strictObject({
  method: z.enum(HttpMethod),
  url: z
    .string()
    .min(1)
    .max(4096)
    .regex(
      /^https?:\/\/[^\s{}]+(\/\S*)?$/,
      'must be an http(s) URL; placeholders only after the host',
    )
    .describe('URL template; {param} placeholders are percent-encoded arguments'),
  headers: z
    .record(
      headerName,
      z
        .string()
        .max(8192)
        .regex(/^[^\r\n]*$/, 'must not contain line breaks'),
    )
    .optional()
    .describe('fixed request headers (no secrets: use auth)'),
  query: z
    .array(z.string().regex(ID_PATTERN))
    .max(128)
    .optional()
    .describe('arguments sent as query parameters'),
  body: z
    .array(z.string().regex(ID_PATTERN))
    .max(512)
    .optional()
    .describe(
      'arguments sent in the JSON body; default every argument not in the URL or query (none for GET and DELETE)',
    ),
  header_params: z
    .record(z.string().regex(ID_PATTERN), headerName)
    .optional()
    .describe('arguments sent as request headers: argument name -> header name'),
  body_param: z
    .string()
    .regex(ID_PATTERN)
    .optional()
    .describe(
      'the argument whose value is the whole JSON body (an OpenAPI request body); excludes `body`',
    ),
  auth: HttpAuth.optional(),
});
export type HttpSpec = z.infer<typeof HttpSpec>;

/** Placeholder names of a URL template, in order. */
export function urlPlaceholders(url: string): string[] {
  return [...url.matchAll(URL_PLACEHOLDER)].map((m) => m[1]!);
}

const DRAFT_2020_12 = 'https://json-schema.org/draft/2020-12/schema';

/**
 * A parameters schema as a draft 2020-12 validator reads it. MCP servers often declare draft-07
 * (`$schema`), for which such a validator has no meta-schema; the keywords tool inputs use mean
 * the same in both, so the declaration is dropped rather than every call refused.
 */
export function asDraft2020(schema: Record<string, unknown>): Record<string, unknown> {
  const declared = schema['$schema'];
  if (declared === undefined || declared === DRAFT_2020_12) return schema;
  const { $schema: _declared, ...rest } = schema;
  return rest;
}
