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

export const ApprovalMode = { required: 'required', destructive: 'destructive' } as const;
export type ApprovalMode = (typeof ApprovalMode)[keyof typeof ApprovalMode];

/** The most a call may wait for a person: one week. */
export const MAX_APPROVAL_TIMEOUT_MS = 7 * 24 * 3_600_000;

/** Who must approve a call before it runs, shared by tool options, agent tool config and targets. */
export const ApprovalOptions = {
  approval: z
    .enum(ApprovalMode)
    .optional()
    .describe(
      'required: every call waits for a person to approve it; destructive: only when the tool is annotated destructiveHint: true',
    ),
  approval_timeout_ms: z
    .int()
    .min(1)
    .max(MAX_APPROVAL_TIMEOUT_MS)
    .optional()
    .describe(
      'how long a call waits for a decision before it fails approval_timeout (default [tools] approval_timeout_ms)',
    ),
};

export const ToolOptions = z.strictObject({
  ...ApprovalOptions,
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

export const HttpAuthType = {
  bearer: 'bearer',
  header: 'header',
  basic: 'basic',
  oauth2: 'oauth2',
} as const;
export type HttpAuthType = (typeof HttpAuthType)[keyof typeof HttpAuthType];

const HEADER_NAME = /^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$/;
const headerName = z.string().regex(HEADER_NAME, 'must be an HTTP header name');

/** Auth from one project secret's value, sent as it is. */
export const SecretAuth = z
  .strictObject({
    type: z.enum(['bearer', 'header', 'basic']),
    secret: secretName.describe('a project secret (PUT /v1/projects/:p/secrets/:name)'),
    header: headerName.optional().describe('the header of type "header", e.g. X-API-Key'),
  })
  .refine((a) => (a.type === 'header') === (a.header !== undefined), {
    message: 'header is required for type "header" and only allowed there',
    path: ['header'],
  })
  .describe('bearer: Authorization: Bearer <secret>; basic: the secret is user:password');
export type SecretAuth = z.infer<typeof SecretAuth>;

/** OAuth 2.0 grants the tools service runs against a token endpoint. */
export const OAuth2Grant = {
  client_credentials: 'client_credentials',
  refresh_token: 'refresh_token',
} as const;
export type OAuth2Grant = (typeof OAuth2Grant)[keyof typeof OAuth2Grant];

/** How the client authenticates at the token endpoint (RFC 6749 2.3.1). */
export const OAuth2ClientAuth = {
  client_secret_basic: 'client_secret_basic',
  client_secret_post: 'client_secret_post',
} as const;
export type OAuth2ClientAuth = (typeof OAuth2ClientAuth)[keyof typeof OAuth2ClientAuth];

/**
 * OAuth 2.0 to the upstream: the tools service gets an access token from the token endpoint and
 * sends it as `Authorization: Bearer <token>`. Every credential is a project secret named here
 * (never a value); scope and audience are plain text.
 */
export const OAuth2Auth = z
  .strictObject({
    type: z.literal('oauth2'),
    grant: z
      .enum(OAuth2Grant)
      .describe('client_credentials, or refresh_token (a stored refresh token is exchanged)'),
    token_url_secret: secretName.describe(
      'the project secret holding the token endpoint URL (https; http only for hosts in tools.allowed_private_hosts)',
    ),
    client_id_secret: secretName.describe('the project secret holding the client id'),
    client_secret_secret: secretName
      .optional()
      .describe(
        'the project secret holding the client secret; required for client_credentials, optional (a public client) for refresh_token',
      ),
    refresh_token_secret: secretName
      .optional()
      .describe(
        'the project secret holding the refresh token (refresh_token grant only); a rotated one is written back to it',
      ),
    client_auth: z
      .enum(OAuth2ClientAuth)
      .optional()
      .describe('how the client secret is sent (default client_secret_basic)'),
    scope: z
      .string()
      .min(1)
      .max(1024)
      .regex(
        /^[\x21\x23-\x5B\x5D-\x7E]+( [\x21\x23-\x5B\x5D-\x7E]+)*$/,
        'must be space-separated scope tokens',
      )
      .optional()
      .describe('space-separated scopes asked for'),
    audience: z
      .string()
      .min(1)
      .max(1024)
      .regex(/^[^\r\n]*$/, 'must not contain line breaks')
      .optional()
      .describe('the audience parameter some servers want (Auth0, Okta)'),
  })
  .superRefine((a, ctx) => {
    if (a.grant === 'client_credentials') {
      if (a.client_secret_secret === undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['client_secret_secret'],
          message: 'is required for grant "client_credentials"',
        });
      }
      if (a.refresh_token_secret !== undefined) {
        ctx.addIssue({
          code: 'custom',
          path: ['refresh_token_secret'],
          message: 'is only allowed with grant "refresh_token"',
        });
      }
    } else if (a.refresh_token_secret === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['refresh_token_secret'],
        message: 'is required for grant "refresh_token"',
      });
    }
    if (a.client_auth !== undefined && a.client_secret_secret === undefined) {
      ctx.addIssue({
        code: 'custom',
        path: ['client_auth'],
        message: 'needs client_secret_secret',
      });
    }
  })
  .describe(
    'OAuth 2.0: tokens from the token endpoint, cached (encrypted) and shared by every tools-service instance, sent as Authorization: Bearer',
  );
export type OAuth2Auth = z.infer<typeof OAuth2Auth>;

export const HttpAuth = z.discriminatedUnion('type', [SecretAuth, OAuth2Auth]);
export type HttpAuth = z.infer<typeof HttpAuth>;

/** `{name}` placeholders of a URL template; `{+name}` keeps the value's slashes (RFC 6570). */
export const URL_PLACEHOLDER = /\{\+?([A-Za-z0-9_-]{1,64})\}/g;

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
    .describe(
      'URL template; {param} placeholders are percent-encoded arguments, {+param} ones keep their slashes',
    ),
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
  query_names: z
    .record(z.string().regex(ID_PATTERN), z.string().min(1).max(256))
    .optional()
    .describe(
      'argument name -> the query parameter it is sent as, for names an argument cannot have (`$.xgafv`)',
    ),
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
