// OpenAPI import: every operation of a document becomes an `http` tool under a prefix the caller
// chooses; importing again under the same prefix updates those tools and disables the ones the
// document dropped. The document comes in the request body only (JSON or YAML text, or a JSON
// object): the api never fetches a URL a tenant names, since it runs inside the deployment's
// network and has no egress guard (the tools service has). `toolmesh tools import-openapi <url>`
// fetches the document on the user's side and sends it here. The body stays raw bytes on the
// event loop (a body past api.openapi_max_bytes is read to its end and answered 413); parsing it,
// validating it, and reading, checking and converting the document run in a worker thread under
// a deadline and a heap limit (openapi/run.ts, body.ts), with checks of the document's depth,
// operations and expanded size before anything expands it (measure.ts): no document holds the
// event loop that serves every other tenant.
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { validatorCompiler } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { RegistryStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse } from '../errors.ts';
import { ProjectParams } from '../schemas.ts';
import { ImportBody } from '../openapi/body.ts';
import { createImportRunner } from '../openapi/run.ts';

/** Most skipped operations named in the message of a refusal (all are in its details). */
const MAX_NAMED = 5;

/**
 * Reads the body as bytes, parsing nothing. Past `limit` bytes (or when Content-Length says so)
 * the rest is read and dropped, and the answer is 413 once the client has sent it all: a client
 * still writing when the server answers and closes sees a reset connection, not the 413.
 */
function readCapped(limit: number) {
  return (
    req: FastifyRequest,
    payload: NodeJS.ReadableStream,
    done: (err: Error | null, body?: Buffer) => void,
  ) => {
    const declared = Number(req.headers['content-length']);
    let over = Number.isFinite(declared) && declared > limit;
    const chunks: Buffer[] = [];
    let size = 0;
    payload.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (!over && size > limit) {
        over = true;
        chunks.length = 0;
      }
      if (!over) chunks.push(chunk);
    });
    payload.on('error', (err: Error) => done(err));
    payload.on('end', () => {
      if (!over) return done(null, Buffer.concat(chunks, size));
      done(
        new ApiError(
          'payload_too_large',
          `the request is larger than api.openapi_max_bytes (${limit} bytes): import a part of the document, or raise the limit`,
          { limit_bytes: limit, ...(Number.isFinite(declared) ? { bytes: declared } : {}) },
        ),
      );
    });
  };
}

const ImportOut = z
  .object({
    prefix: z.string(),
    added: z.array(z.string()),
    changed: z.array(z.string()),
    removed: z.array(z.string()).describe('no longer in the document: disabled, not deleted'),
    unchanged: z.array(z.string()),
    skipped: z
      .array(z.object({ operation: z.string(), reason: z.string() }))
      .describe('operations the http kind cannot run, with the reason'),
    filtered: z.number().int().describe('operations left out by include/exclude'),
    warnings: z.array(z.string()),
  })
  .meta({ id: 'OpenApiImport' });

export const openApiRoutes =
  ({
    store,
    auth,
    registryEvents,
    config,
    logger,
  }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    // The body stays bytes on this loop: the worker parses and validates it (openapi/body.ts).
    app.removeContentTypeParser('application/json');
    app.addContentTypeParser('application/json', readCapped(config.api.openapi_max_bytes));
    const runner = createImportRunner({
      limits: {
        maxDepth: config.api.max_json_depth,
        maxOperations: config.api.openapi_max_document_operations,
        maxExpansion: config.api.openapi_max_expansion,
        maxSchemaDepth: config.tools.max_schema_depth,
      },
      timeoutMs: config.api.openapi_timeout_ms,
      maxHeapMb: config.api.openapi_max_heap_mb,
      maxConcurrent: config.api.openapi_max_concurrent,
      logger: logger.child({ component: 'openapi-import' }),
    });
    app.post(
      '/projects/:project/openapi',
      {
        onRequest: auth.requireProject,
        // The body schema documents the route; the worker validates the body (a Buffer here).
        validatorCompiler: (route) =>
          route.httpPart === 'body'
            ? (data: unknown) => ({ value: data })
            : validatorCompiler(route as unknown as Parameters<typeof validatorCompiler>[0]),
        schema: {
          tags: ['tools'],
          summary:
            'Import an OpenAPI 3.0/3.1 (or Swagger 2.0) document: each operation becomes an http tool <prefix>.<operationId>. Importing again updates them; dropped operations are disabled',
          params: ProjectParams,
          body: ImportBody,
          response: {
            200: ImportOut,
            400: ErrorResponse,
            401: ErrorResponse,
            409: ErrorResponse,
            413: ErrorResponse,
            415: ErrorResponse,
            422: ErrorResponse,
            429: ErrorResponse,
          },
        },
      },
      async (req) => {
        const { project } = req.params;
        const raw: unknown = req.body;
        if (!(raw instanceof Uint8Array)) {
          throw new ApiError('unsupported_media_type', 'send the import as application/json');
        }
        const { request: b, prepared } = await runner.prepare(raw);
        const { tools, skipped, filtered, warnings } = prepared;
        const max = config.api.openapi_max_operations;
        if (tools.length > max) {
          throw new ApiError(
            'payload_too_large',
            `the document has ${tools.length} operations to import, more than api.openapi_max_operations (${max}): narrow it with include or exclude`,
            { operations: tools.length, limit: max },
          );
        }
        if (tools.length === 0) {
          const named = skipped
            .slice(0, MAX_NAMED)
            .map((s) => `${s.operation}: ${s.reason}`)
            .join('; ');
          const more = skipped.length > MAX_NAMED ? `; and ${skipped.length - MAX_NAMED} more` : '';
          throw new ApiError(
            'invalid_openapi',
            skipped.length > 0
              ? `no operation of the document can be imported (${named}${more})`
              : `no operation of the document can be imported: ${filtered > 0 ? 'include/exclude left none' : 'it has none'}`,
            { skipped, filtered },
          );
        }
        const outcome = await store.openapiImports.apply(project, b.prefix, tools);
        if (outcome.conflicts.length > 0) {
          throw new ApiError(
            'conflict',
            `tool names taken by tools that are not this import's: ${outcome.conflicts.slice(0, 10).join(', ')}; choose another prefix`,
            { conflicts: outcome.conflicts },
          );
        }
        if (outcome.added.length > 0) {
          await registryEvents.changed(project, 'created', outcome.added);
        }
        const updated = [...outcome.changed, ...outcome.removed];
        if (updated.length > 0) await registryEvents.changed(project, 'updated', updated);
        req.log.info(
          {
            project,
            prefix: b.prefix,
            added: outcome.added.length,
            changed: outcome.changed.length,
            removed: outcome.removed.length,
            skipped: skipped.length,
          },
          'openapi import',
        );
        return {
          prefix: b.prefix,
          added: outcome.added,
          changed: outcome.changed,
          removed: outcome.removed,
          unchanged: outcome.unchanged,
          skipped,
          filtered,
          warnings,
        };
      },
    );
  };
