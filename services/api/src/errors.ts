// Every 4xx and 5xx answer has one shape, `{ error: { code, message, details? } }`, with a
// machine-readable code. Fastify's own errors (bad JSON, oversize bodies, schema failures) are
// mapped here, at one boundary.
import type { FastifyError, FastifyReply, FastifyRequest } from 'fastify';
import { hasZodFastifySchemaValidationErrors } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { MeshError } from '@toolmesh/protocol';

export const ApiErrorCode = {
  unauthorized: 401,
  forbidden: 403,
  not_found: 404,
  invalid_request: 400,
  invalid_id: 400,
  malformed_json: 400,
  invalid_schema: 400,
  reserved_name: 400,
  invalid_upload: 400,
  invalid_openapi: 400,
  invalid_server_json: 400,
  invalid_url: 400,
  unsupported_server: 400,
  missing_variables: 400,
  missing_secret: 400,
  invalid_idempotency_key: 400,
  /** A JSON value (the body, arguments, a schema) nests deeper than its configured limit. */
  nesting_too_deep: 400,
  conflict: 409,
  /** An input request's answer does not match the form its MCP server asked for. */
  invalid_input: 400,
  /** An input request past its deadline (its call fails input_expired): too late to answer. */
  input_expired: 409,
  /** Another request holding the same Idempotency-Key is still in progress. */
  idempotency_key_in_use: 409,
  /** The Idempotency-Key was first sent with another request. */
  idempotency_key_reused: 422,
  /** The tool_call_id names a call another request (or another way in) started. */
  tool_call_id_reused: 422,
  mcp_server_disabled: 409,
  payload_too_large: 413,
  /** An OpenAPI document holds more operations than api.openapi_max_document_operations. */
  openapi_operations_limit: 413,
  /** An OpenAPI document expands past api.openapi_max_expansion once its $refs are replaced. */
  openapi_expansion_limit: 422,
  /** An OpenAPI import's work outlived api.openapi_timeout_ms; its worker was stopped. */
  openapi_time_limit: 422,
  /** An OpenAPI import's work outgrew api.openapi_max_heap_mb; its worker was stopped. */
  openapi_memory_limit: 422,
  /** api.openapi_max_concurrent imports are running on this instance; retry after a second. */
  openapi_busy: 429,
  rate_limited: 429,
  /** A project quota (its command stream's stored messages or bytes, a message's size). */
  quota_exceeded: 429,
  /** A project's (or key's, or address's) share of an instance's resource is taken. */
  mcp_session_limit: 429,
  stream_limit: 429,
  inflight_limit: 429,
  connection_limit: 429,
  /** The instance's own cap of that resource is reached: nothing the client did. */
  mcp_session_capacity: 503,
  stream_capacity: 503,
  connection_capacity: 503,
  /** The project holds [api] max_keys_per_project active keys. */
  key_limit: 409,
  unsupported_media_type: 415,
  unavailable: 503,
  secrets_unconfigured: 503,
  bus_auth_unconfigured: 503,
  internal_error: 500,
  /** A call was sent but not acknowledged: it may run; send it again under its tool_call_id. */
  outcome_unknown: 504,
} as const;
export type ApiErrorCode = keyof typeof ApiErrorCode;

export class ApiError extends Error {
  readonly code: string;
  readonly status: number;
  readonly details: Record<string, unknown> | undefined;
  constructor(
    code: ApiErrorCode | { code: string; status: number },
    message: string,
    details?: Record<string, unknown>,
  ) {
    super(message);
    this.name = 'ApiError';
    this.code = typeof code === 'string' ? code : code.code;
    this.status = typeof code === 'string' ? ApiErrorCode[code] : code.status;
    this.details = details;
  }
}

export const notFound = (what: string, id: string): ApiError =>
  new ApiError('not_found', `${what} ${JSON.stringify(id)} not found`);

export const ErrorResponse = z
  .object({
    error: z.object({
      code: z.string(),
      message: z.string(),
      details: z.record(z.string(), z.unknown()).optional(),
    }),
  })
  .meta({ id: 'Error' });

function send(
  reply: FastifyReply,
  status: number,
  code: string,
  message: string,
  details?: Record<string, unknown>,
) {
  return reply
    .status(status)
    .send({ error: details ? { code, message, details } : { code, message } });
}

export function errorHandler(err: FastifyError, req: FastifyRequest, reply: FastifyReply) {
  if (err instanceof ApiError) {
    const retryAfter = err.details?.['retry_after_sec'];
    if (err.status === 429 && typeof retryAfter === 'number') {
      reply.header('retry-after', String(retryAfter));
    }
    return send(reply, err.status, err.code, err.message, err.details);
  }
  if (hasZodFastifySchemaValidationErrors(err)) {
    const issues = err.validation.map((v) => ({
      path: v.instancePath,
      message: v.message ?? 'invalid',
    }));
    const inParams = err.validationContext === 'params';
    const first = issues[0];
    return send(
      reply,
      400,
      inParams ? 'invalid_id' : 'invalid_request',
      `${err.validationContext ?? 'request'}${first?.path ?? ''}: ${first?.message ?? 'invalid'}`,
      { issues },
    );
  }
  switch (err.code) {
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return send(reply, 400, 'malformed_json', `request body is not valid JSON: ${err.message}`);
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
    case 'FST_REQ_FILE_TOO_LARGE':
    case 'FST_FILES_LIMIT':
    case 'FST_PARTS_LIMIT':
      return send(reply, 413, 'payload_too_large', err.message);
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
    case 'FST_INVALID_MULTIPART_CONTENT_TYPE':
      return send(reply, 415, 'unsupported_media_type', err.message);
    default:
  }
  if (err instanceof SyntaxError && err.statusCode === 400) {
    return send(reply, 400, 'malformed_json', `request body is not valid JSON: ${err.message}`);
  }
  if (err instanceof MeshError && err.code === 'unavailable') {
    // The driver's text (hosts, users, sometimes a URL) goes to the logs, not to the caller.
    req.log.warn({ err }, 'dependency unavailable');
    const dependency = /postgres/i.test(err.message)
      ? 'the database'
      : /nats|bus/i.test(err.message)
        ? 'the message bus'
        : 'a service the api depends on';
    return send(reply, 503, 'unavailable', `${dependency} is unavailable; retry later`);
  }
  if (err instanceof MeshError && err.code === 'quota_exceeded') {
    return send(reply, 429, 'quota_exceeded', err.message, err.details);
  }
  if (err instanceof MeshError && err.code === 'invalid_id') {
    return send(reply, 400, 'invalid_id', err.message, err.details);
  }
  if (typeof err.statusCode === 'number' && err.statusCode >= 400 && err.statusCode < 500) {
    return send(reply, err.statusCode, 'invalid_request', err.message);
  }
  req.log.error({ err }, 'request failed');
  return send(reply, 500, 'internal_error', 'internal error; see the api logs');
}
