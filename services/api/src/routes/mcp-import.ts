// MCP servers from the MCP Registry's server.json format: `POST .../mcp-servers/import` takes an
// entry inline or by name from the operator's catalog folder (`GET /v1/catalog` lists it), turns a
// remote into an http server or an npm package into a stdio server run in the project's sandbox
// (catalog/plan.ts), stores it (re-importing the same entry name updates it) and asks the tools
// service to discover its tools, as registration does. Secret values never pass through here:
// the request names project secrets, the tools service reads them at connect time.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ID_PATTERN } from '@toolmesh/protocol';
import type { RegistryStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams } from '../schemas.ts';
import { findInCatalog, readCatalog } from '../catalog/folder.ts';
import { planImport, requiredInputsOf, transportsOf } from '../catalog/plan.ts';
import { issuesOf, ServerJson } from '../catalog/server-json.ts';
import { createMcpDiscovery, RefreshOut, ServerOut } from './mcp-server-view.ts';

const SecretName = z.string().regex(ID_PATTERN, 'must be a secret name (1-64 of [A-Za-z0-9_-])');
const InputName = z.string().min(1).max(256);

const ImportBody = z
  .strictObject({
    server: z
      .record(z.string(), z.unknown())
      .optional()
      .describe(
        'an MCP Registry server.json entry (name, description, version, remotes, packages)',
      ),
    catalog: z
      .string()
      .min(1)
      .max(200)
      .optional()
      .describe('the name of an entry of the operator catalog (GET /v1/catalog) instead'),
    name: Id.optional().describe(
      'the server name in the project (<name>.<tool>); default: the part of the entry name after the slash',
    ),
    secrets: z
      .record(InputName, SecretName)
      .refine((m) => Object.keys(m).length <= 64, 'at most 64 entries')
      .default({})
      .describe(
        'declared environment variable, header or {placeholder} -> the project secret it takes',
      ),
    variables: z
      .record(InputName, z.string().max(16_384))
      .refine((m) => Object.keys(m).length <= 64, 'at most 64 entries')
      .default({})
      .describe('plain values of declared inputs that are not secret'),
    use: z
      .enum(['remote', 'package'])
      .optional()
      .describe('which transport when the entry has both (default: remote)'),
    index: z.number().int().min(0).max(31).optional().describe('which remote or package (0-based)'),
  })
  .refine((b) => (b.server === undefined) !== (b.catalog === undefined), {
    message: 'give exactly one of "server" (an inline server.json) and "catalog" (an entry name)',
  });

const ImportOut = ServerOut.extend({
  refresh: RefreshOut.optional(),
  import: z.object({
    outcome: z.enum(['created', 'updated']),
    source: z.object({ name: z.string(), version: z.string(), catalog: z.string().optional() }),
    chosen: z.object({
      kind: z.enum(['remote', 'package']),
      index: z.number().int(),
      type: z.string(),
    }),
    warnings: z.array(z.string()),
  }),
}).meta({ id: 'McpServerImported' });

const Required = z.object({
  name: z.string(),
  kind: z.enum(['environment_variable', 'header', 'argument', 'variable']),
  is_secret: z.boolean(),
  description: z.string().optional(),
});
const CatalogOut = z
  .object({
    configured: z.boolean().describe('false when [catalog] dir is not set'),
    entries: z.array(
      z.object({
        name: z.string(),
        title: z.string().optional(),
        description: z.string(),
        version: z.string(),
        file: z.string(),
        transports: z.array(z.string()).describe('streamable-http, sse, npm:stdio, pypi:stdio...'),
        required_variables: z.array(Required),
      }),
    ),
    invalid: z
      .array(z.object({ file: z.string(), error: z.string() }))
      .describe('files of the folder that are not valid server.json entries'),
  })
  .meta({ id: 'McpCatalog' });

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  409: ErrorResponse,
};

export const mcpImportRoutes =
  ({
    store,
    nc,
    config,
    logger,
    auth,
    registryEvents,
  }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const log = logger.child({ component: 'mcp-import' });
    const { refresh, answer } = createMcpDiscovery({ store, nc, config, logger: log });

    app.get(
      '/catalog',
      {
        onRequest: auth.requireKey,
        schema: {
          tags: ['mcp'],
          summary:
            "The operator's MCP server catalog: server.json entries a project may import by name",
          response: { 200: CatalogOut, 401: ErrorResponse },
        },
      },
      async () => {
        const listing = await readCatalog(config.catalog.dir).catch((err: unknown) => {
          log.error({ err, dir: config.catalog.dir }, 'the catalog folder cannot be read');
          throw new ApiError('unavailable', 'the catalog folder cannot be read');
        });
        return {
          configured: listing.configured,
          entries: listing.entries.map(({ file, entry }) => ({
            name: entry.name,
            ...(entry.title ? { title: entry.title } : {}),
            description: entry.description,
            version: entry.version,
            file,
            transports: transportsOf(entry),
            required_variables: requiredInputsOf(entry),
          })),
          invalid: listing.invalid,
        };
      },
    );

    app.post(
      '/projects/:project/mcp-servers/import',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['mcp'],
          summary:
            'Import an MCP server from a server.json entry (inline or from the catalog): a remote becomes an http server, an npm package a stdio server in the sandbox',
          params: ProjectParams,
          body: ImportBody,
          response: { 200: ImportOut, 201: ImportOut, ...errors },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        const body = req.body;
        let raw: unknown = body.server;
        if (body.catalog !== undefined) {
          const found = await findInCatalog(config.catalog.dir, body.catalog).catch(
            () => undefined,
          );
          if (!found) throw notFound('catalog entry', body.catalog);
          raw = found.entry;
        }
        const parsed = ServerJson.safeParse(raw);
        if (!parsed.success) {
          throw new ApiError('invalid_server_json', 'the entry is not a valid server.json', {
            issues: issuesOf(parsed.error),
          });
        }
        const plan = planImport(parsed.data, {
          name: body.name,
          secrets: body.secrets,
          variables: body.variables,
          use: body.use,
          index: body.index,
          catalog: body.catalog,
        });
        const absent: string[] = [];
        for (const s of plan.secrets) if (!(await store.secrets.get(project, s))) absent.push(s);
        if (absent.length > 0) {
          throw new ApiError(
            'missing_secret',
            `the project has no secret ${absent.map((s) => JSON.stringify(s)).join(', ')}: store it with PUT /v1/projects/${project}/secrets/<name> first`,
            { secrets: absent },
          );
        }
        const done = await store.mcpServers.importServer(project, plan.server);
        if (done.outcome === 'conflict') throw new ApiError('conflict', done.message);
        log.info(
          {
            project,
            server: plan.server.name,
            source: plan.server.import_source.name,
            outcome: done.outcome,
            chosen: plan.chosen,
          },
          'MCP server imported',
        );
        // An update may point the server elsewhere: every tools service drops its connection.
        if (done.outcome === 'updated' && done.tools.length > 0) {
          await registryEvents.changed(project, 'updated', done.tools);
        }
        const found = await refresh(project, plan.server.name);
        const out = await answer(project, plan.server.name, found);
        return reply.status(done.outcome === 'created' ? 201 : 200).send({
          ...out,
          import: {
            outcome: done.outcome,
            source: plan.server.import_source,
            chosen: plan.chosen,
            warnings: plan.warnings,
          },
        });
      },
    );
  };
