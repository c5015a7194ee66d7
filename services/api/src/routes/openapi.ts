// OpenAPI import: every operation of a document becomes an `http` tool under a prefix the caller
// chooses; importing again under the same prefix updates those tools and disables the ones the
// document dropped. The document comes in the request body only (JSON or YAML text, or a JSON
// object): the api never fetches a URL a tenant names, since it runs inside the deployment's
// network and has no egress guard (the tools service has). `toolmesh tools import-openapi <url>`
// fetches the document on the user's side and sends it here. Reading, validating and converting
// the document run in a worker thread under a deadline and a heap limit (openapi/run.ts), after
// checks of its size, depth, operations and expanded size that need no expansion (measure.ts):
// no document holds the event loop that serves every other tenant.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { OAuth2Auth } from '@toolmesh/protocol';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';
import { createImportRunner } from '../openapi/run.ts';
import { assertRegistrable } from './tools-schema.ts';

const Selector = z.string().min(1).max(200);

const ImportBody = z.strictObject({
  prefix: Id.describe('the tools are named <prefix>.<operationId>; one import per prefix'),
  document: z
    .union([z.string().min(1), z.record(z.string(), z.unknown())])
    .describe('the OpenAPI 3.0 or 3.1 document: JSON or YAML text, or a JSON object'),
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
  ({ store, auth, registryEvents, config, logger }: RouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
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
        bodyLimit: config.api.openapi_max_bytes,
        schema: {
          tags: ['tools'],
          summary:
            'Import an OpenAPI 3.0/3.1 document: each operation becomes an http tool <prefix>.<operationId>. Importing again updates them; dropped operations are disabled',
          params: ProjectParams,
          body: ImportBody,
          response: {
            200: ImportOut,
            400: ErrorResponse,
            401: ErrorResponse,
            409: ErrorResponse,
            413: ErrorResponse,
            422: ErrorResponse,
            429: ErrorResponse,
          },
        },
      },
      async (req) => {
        const { project } = req.params;
        const b = req.body;
        assertRegistrable(`${b.prefix}.x`);
        const { tools, skipped, filtered, warnings } = await runner.prepare(b.document, {
          prefix: b.prefix,
          baseUrl: b.base_url,
          security: b.security,
          include: b.include,
          exclude: b.exclude,
          category: b.category,
          tags: b.tags,
        });
        const max = config.api.openapi_max_operations;
        if (tools.length > max) {
          throw new ApiError(
            'payload_too_large',
            `the document has ${tools.length} operations to import, more than api.openapi_max_operations (${max}): narrow it with include or exclude`,
            { operations: tools.length, limit: max },
          );
        }
        if (tools.length === 0) {
          throw new ApiError('invalid_openapi', 'no operation of the document can be imported', {
            skipped,
            filtered,
          });
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
