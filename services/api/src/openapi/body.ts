// The body of POST /projects/:p/openapi, read in the import's worker thread (worker.ts), never on
// the api's event loop: the route hands the worker the raw bytes, and JSON parsing, the depth
// check and the validation of the envelope happen there, with the document's own checks after.
// A multi-megabyte body costs the loop only its bytes.
import { z } from 'zod';
import { OAuth2Auth, jsonDepth } from '@toolmesh/protocol';
import { ApiError } from '../errors.ts';
import { Id } from '../schemas.ts';

const Selector = z.string().min(1).max(200);

export const ImportBody = z.strictObject({
  prefix: Id.describe('the tools are named <prefix>.<operationId>; one import per prefix'),
  document: z
    .union([z.string().min(1), z.record(z.string(), z.unknown())])
    .describe(
      'the OpenAPI 3.0 or 3.1 (or Swagger 2.0) document: JSON or YAML text, or a JSON object',
    ),
  base_url: z
    .url({ protocol: /^https?$/ })
    .max(2048)
    .optional()
    .describe("replaces the document's servers (needed when they are relative)"),
  security: z
    .record(z.string().min(1).max(200), z.union([Id, OAuth2Auth]))
    .default({})
    .describe(
      "security scheme name -> the project secret sent for it, or for an oauth2 or openIdConnect scheme an OAuth 2.0 auth config (the tools service gets and refreshes the tokens; the scopes of the operation's requirement unless it names a scope)",
    ),
  include: z
    .array(Selector)
    .max(1000)
    .optional()
    .describe('operation ids or tags to import (default all)'),
  exclude: z.array(Selector).max(1000).optional().describe('operation ids or tags to leave out'),
  category: Id.default('openapi'),
  tags: z.array(Id).max(16).default([]).describe('added to every tool besides its own tags'),
});
export type ImportBody = z.infer<typeof ImportBody>;

/** The import's request without its document (what the route needs back from the worker). */
export type ImportRequest = Omit<ImportBody, 'document'>;

/** The body as the route's validation would have read it, or the same 400 it would answer. */
export function readImportBody(raw: Uint8Array, maxDepth: number): ImportBody {
  const text = Buffer.from(raw.buffer, raw.byteOffset, raw.byteLength).toString('utf8');
  let value: unknown;
  try {
    value = text === '' ? {} : JSON.parse(text);
  } catch (err) {
    throw new ApiError(
      'malformed_json',
      `request body is not valid JSON: ${(err as Error).message}`,
    );
  }
  if (jsonDepth(value, maxDepth) > maxDepth) {
    throw new ApiError(
      'nesting_too_deep',
      `the request body nests deeper than ${maxDepth} levels of objects and arrays (api.max_json_depth)`,
      { limit_depth: maxDepth },
    );
  }
  const parsed = ImportBody.safeParse(value);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 20).map((i) => ({
      path: i.path.length > 0 ? `/${i.path.join('/')}` : '',
      message: i.message,
    }));
    const first = issues[0];
    throw new ApiError(
      'invalid_request',
      `body${first?.path ?? ''}: ${first?.message ?? 'invalid'}`,
      { issues },
    );
  }
  return parsed.data;
}
