// The tool registry of a project: register tools, find them (category, tags, text, origin; with
// counts per category and tag), read one with its usage, update and delete. Deprecated tools are
// left out of lists unless asked for; they still run. A tool is `external` (its own service consumes its
// calls) or `http` (the tools service runs it from its request template). Every change is
// announced on `evt.sys.registry.changed`, so tool services drop their cached copy at once. The seeded `skills.*` and `builtin.*`
// tools are reserved: they cannot be registered, changed or deleted; the one exception is
// `enabled`, so a project can switch off a reserved tool it does not want its agents to use.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ApprovalMode, type HttpSpec } from '@toolmesh/protocol';
import { type RegistryStore, ToolOrigin, type ToolRecord, type ToolUsage } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams, ToolName, iso } from '../schemas.ts';
import {
  HttpToolSpec,
  OutputSchema,
  ToolAnnotationsSchema,
  ParametersSchema,
  ToolOptions,
  assertRegistrable,
  checkHttpSpec,
  checkParametersSchema,
} from './tools-schema.ts';

/** Kinds a tool can be registered as here (mcp tools come from /mcp-servers). */
const RegistrableKind = { external: 'external', http: 'http' } as const;

const Category = Id.describe('1-64 characters of [A-Za-z0-9_-]');
const Tags = z
  .array(Id)
  .max(32)
  .transform((tags) => [...new Set(tags)])
  .describe('up to 32 tags of [A-Za-z0-9_-]; duplicates are dropped');
const Description = z.string().min(1).max(8192).describe('what the tool does, for the model');
const Version = z
  .string()
  .min(1)
  .max(100)
  .describe('the version of the API or server the tool belongs to, e.g. "2.1.0"');
const DeprecationMessage = z
  .string()
  .min(1)
  .max(2000)
  .describe('what callers should use instead; written into the card of every call');
const MAX_TAG_FILTERS = 16;

const DefinitionText = z.object({
  description: z.string(),
  parameters: z.record(z.string(), z.unknown()),
  annotations: z.record(z.string(), z.boolean()),
  output_schema: z.record(z.string(), z.unknown()).nullable(),
});
const PendingDefinitionOut = z
  .object({
    current: DefinitionText.describe('the approved definition, in force'),
    proposed: DefinitionText.describe('what the server lists now'),
    hash: z.string().describe('sha256 of the proposed definition; approve-definition may name it'),
    detected_at: z.string(),
  })
  .meta({ id: 'PendingDefinition' });

const ToolOut = z
  .object({
    name: z.string(),
    target: z.string(),
    description: z.string(),
    category: z.string(),
    tags: z.array(z.string()),
    parameters: z.record(z.string(), z.unknown()),
    // Not strict: an option this version does not know is dropped from the answer, not a 500.
    options: z.object({
      timeout_ms: z.number().int().optional(),
      rate_limit: z.record(z.string(), z.unknown()).optional(),
      retries: z.record(z.string(), z.unknown()).optional(),
      cost: z.record(z.string(), z.unknown()).optional(),
      idempotent: z
        .boolean()
        .optional()
        .describe('false: a call taken over from a dead instance mid-run ends interrupted'),
      approval: z
        .enum(ApprovalMode)
        .optional()
        .describe(
          'required, or destructive (when destructiveHint is true): calls wait for a person',
        ),
      approval_timeout_ms: z.number().int().optional(),
    }),
    origin: z.enum(ToolOrigin).describe('who runs it: skills, builtin, external, http or mcp'),
    http: z
      .record(z.string(), z.unknown())
      .optional()
      .describe('the request template of an http tool'),
    annotations: z
      .object({
        readOnlyHint: z.boolean().optional(),
        destructiveHint: z.boolean().optional(),
        idempotentHint: z.boolean().optional(),
        openWorldHint: z.boolean().optional(),
      })
      .describe('MCP tool annotations; a missing hint is unknown'),
    output_schema: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe('JSON Schema of the structured result, when one is known'),
    reserved: z.boolean().describe('a seeded skills.* or builtin.* tool'),
    enabled: z.boolean(),
    version: z.string().nullable().describe('the version of the API or server it came from'),
    deprecated: z
      .boolean()
      .describe('hidden from lists unless include_deprecated=true; calls run and note it'),
    deprecation_message: z.string().nullable(),
    pending_definition: PendingDefinitionOut.nullable().describe(
      'MCP tools: a changed definition their server lists, held until approved (calls fail definition_changed meanwhile); null when none',
    ),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Tool' });
const UsageOut = z
  .object({
    calls: z.number().int(),
    succeeded: z.number().int(),
    failed: z.number().int(),
    timeout: z.number().int(),
    canceled: z.number().int(),
    active: z.number().int().describe('queued or running now'),
    avg_duration_ms: z.number().nullable(),
    last_called_at: z.string().nullable(),
  })
  .meta({ id: 'ToolUsage' });
const ToolDetailsOut = ToolOut.extend({ usage: UsageOut }).meta({ id: 'ToolDetails' });

const ToolParams = ProjectParams.extend({ name: ToolName });
/** The options a reserved tool's project may set. */
const APPROVAL_KEYS: ReadonlySet<string> = new Set(['approval', 'approval_timeout_ms']);

const isReserved = (t: ToolRecord) =>
  t.origin === ToolOrigin.skills || t.origin === ToolOrigin.builtin;
const toolOut = (t: ToolRecord) => ({
  name: t.name,
  target: t.target,
  description: t.description,
  category: t.category,
  tags: t.tags,
  parameters: t.parameters,
  options: t.options,
  origin: t.origin,
  ...(t.origin === ToolOrigin.http ? { http: t.spec } : {}),
  annotations: t.annotations,
  output_schema: t.output_schema,
  reserved: isReserved(t),
  enabled: t.enabled,
  version: t.version,
  deprecated: t.deprecated,
  deprecation_message: t.deprecation_message,
  pending_definition: t.pending_definition
    ? {
        current: {
          description: t.description,
          parameters: t.parameters,
          annotations: t.annotations as Record<string, boolean>,
          output_schema: t.output_schema,
        },
        proposed: {
          description: t.pending_definition.description,
          parameters: t.pending_definition.parameters,
          annotations: t.pending_definition.annotations,
          output_schema: t.pending_definition.output_schema,
        },
        hash: t.pending_definition.hash,
        detected_at: t.pending_definition.detected_at,
      }
    : null,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});
const usageOut = (u: ToolUsage) => ({ ...u, last_called_at: iso(u.last_called_at) });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const toolRoutes =
  ({ store, auth, registryEvents, config }: RouteDeps<RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const schemaDepth = config.tools.max_schema_depth;
    app.post(
      '/projects/:project/tools',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tools'],
          summary:
            'Register a tool; its calls are published on cmd.tool.<target>.<tool>. kind "http": the tools service runs it from `http`',
          params: ProjectParams,
          body: z
            .strictObject({
              name: ToolName.describe(
                '<target>.<tool>; skills, builtin and sys targets are reserved',
              ),
              description: Description,
              category: Category.default('general'),
              tags: Tags.default([]),
              parameters: ParametersSchema,
              options: ToolOptions.default({}),
              annotations: ToolAnnotationsSchema.default({}),
              output_schema: OutputSchema.optional(),
              version: Version.optional(),
              deprecated: z.boolean().default(false),
              deprecation_message: DeprecationMessage.optional(),
              kind: z
                .enum(RegistrableKind)
                .default('external')
                .describe(
                  'external: a service of its own consumes the calls; http: the tools service',
                ),
              http: HttpToolSpec.optional().describe('required for kind "http"'),
            })
            .refine((b) => (b.kind === 'http') === (b.http !== undefined), {
              message: '`http` is required for kind "http" and only allowed there',
              path: ['http'],
            }),
          response: { 201: ToolOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { name, parameters, kind, http, ...rest } = req.body;
        assertRegistrable(name);
        checkParametersSchema(parameters, schemaDepth);
        if (rest.output_schema)
          checkParametersSchema(rest.output_schema, schemaDepth, 'output_schema');
        if (http) checkHttpSpec(http, parameters);
        const created = await store.tools.create(req.params.project, {
          ...rest,
          name,
          parameters,
          target: name.slice(0, name.indexOf('.')),
          origin: kind === 'http' ? ToolOrigin.http : ToolOrigin.external,
          ...(http ? { spec: http } : {}),
        });
        if (!created) throw new ApiError('conflict', `tool ${JSON.stringify(name)} already exists`);
        await registryEvents.changed(req.params.project, 'created', [name]);
        return reply.status(201).send(toolOut(created));
      },
    );

    app.get(
      '/projects/:project/tools',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['tools'],
          summary:
            'List tools, optionally by category, tags (every one given), origin or text in name and description, with counts per category and tag; deprecated tools only with include_deprecated=true',
          params: ProjectParams,
          querystring: z.strictObject({
            category: Category.optional(),
            tag: z
              .union([Id, z.array(Id).max(MAX_TAG_FILTERS)])
              .optional()
              .describe(
                'repeat for several (?tag=a&tag=b): a tool must carry every one given (all, not any)',
              ),
            q: z
              .string()
              .min(1)
              .max(200)
              .optional()
              .describe('case-insensitive text in name or description'),
            origin: z.enum(ToolOrigin).optional(),
            include_deprecated: z
              .enum(['true', 'false'])
              .default('false')
              .describe('true: deprecated tools are listed and counted too'),
            limit: Limit,
            after: ToolName.optional().describe('the last name of the previous page'),
          }),
          response: {
            200: z.object({
              tools: z.array(ToolOut),
              counts: z
                .object({
                  total: z.number().int().describe('tools matching the filter, on every page'),
                  categories: z.record(z.string(), z.number().int()),
                  tags: z.record(z.string(), z.number().int()),
                })
                .describe(
                  'over every tool the filter matches (not only this page): how many per category and per tag',
                ),
            }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { tag, include_deprecated, ...rest } = req.query;
        const filter = {
          ...rest,
          tags: tag === undefined ? undefined : [...new Set(typeof tag === 'string' ? [tag] : tag)],
          includeDeprecated: include_deprecated === 'true',
        };
        const [tools, counts] = await Promise.all([
          store.tools.list(req.params.project, filter),
          store.tools.facets(req.params.project, filter),
        ]);
        return { tools: tools.map(toolOut), counts };
      },
    );

    app.get(
      '/projects/:project/tools/:name',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['tools'],
          summary: 'A tool with its usage: calls by outcome, average duration, last call',
          params: ToolParams,
          response: { 200: ToolDetailsOut, ...errors },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const tool = await store.tools.get(project, name);
        if (!tool) throw notFound('tool', name);
        return { ...toolOut(tool), usage: usageOut(await store.tools.usage(project, name)) };
      },
    );

    app.patch(
      '/projects/:project/tools/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tools'],
          summary:
            'Update a tool; `options` and `tags` replace the old values. Reserved tools accept only `enabled` and the approval options (`options.approval`, `options.approval_timeout_ms`)',
          params: ToolParams,
          body: z
            .strictObject({
              description: Description.optional(),
              category: Category.optional(),
              tags: Tags.optional(),
              parameters: ParametersSchema.optional(),
              options: ToolOptions.optional(),
              enabled: z.boolean().optional(),
              annotations: ToolAnnotationsSchema.optional().describe(
                'replaces the annotations; {} clears them',
              ),
              output_schema: OutputSchema.nullable().optional().describe('null removes it'),
              version: Version.nullable().optional().describe('null removes it'),
              deprecated: z.boolean().optional(),
              deprecation_message: DeprecationMessage.nullable()
                .optional()
                .describe('null removes it'),
              http: HttpToolSpec.optional().describe('replaces the template of an http tool'),
            })
            .refine((b) => Object.keys(b).length > 0, { message: 'nothing to update' }),
          response: { 200: ToolOut, ...errors },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const current = await store.tools.get(project, name);
        if (!current) throw notFound('tool', name);
        let options = req.body.options;
        if (isReserved(current)) {
          const other = [
            ...Object.keys(req.body).filter((k) => k !== 'enabled' && k !== 'options'),
            ...Object.keys(options ?? {})
              .filter((k) => !APPROVAL_KEYS.has(k))
              .map((k) => `options.${k}`),
          ];
          if (other.length > 0) {
            throw new ApiError(
              'reserved_name',
              `tool ${JSON.stringify(name)} is reserved: only "enabled", "options.approval" and "options.approval_timeout_ms" can be changed`,
              {
                fields: other,
              },
            );
          }
        }
        if (options && isReserved(current)) {
          // The release's own options of a reserved tool (idempotent) stay; approval is replaced.
          const kept = Object.entries(current.options).filter(([k]) => !APPROVAL_KEYS.has(k));
          options = { ...Object.fromEntries(kept), ...options };
        }
        if (req.body.parameters) checkParametersSchema(req.body.parameters, schemaDepth);
        if (req.body.output_schema)
          checkParametersSchema(req.body.output_schema, schemaDepth, 'output_schema');
        const { http, ...patch } = req.body;
        if (http && current.origin !== ToolOrigin.http) {
          throw new ApiError('invalid_request', `tool ${JSON.stringify(name)} is not an http tool`);
        }
        if (current.origin === ToolOrigin.http && (http || req.body.parameters)) {
          // A new template or new parameters: the pair must still fit together.
          checkHttpSpec(
            http ?? (current.spec as HttpSpec),
            req.body.parameters ?? current.parameters,
          );
        }
        // A tool its MCP server's disabling switched off follows the server: it cannot be
        // switched on alone, and one switched off by hand now stays off when the server returns.
        let serverSpec: Record<string, unknown> | undefined;
        if (current.origin === ToolOrigin.mcp && current.spec['server_disabled'] === true) {
          const server = String(current.spec['server']);
          if (req.body.enabled === true) {
            throw new ApiError(
              'mcp_server_disabled',
              `tool ${JSON.stringify(name)} is off because its MCP server ${JSON.stringify(server)} is disabled: enable the server (POST .../mcp-servers/${server}/enable)`,
            );
          }
          if (req.body.enabled === false) {
            const { server_disabled: _marker, ...rest } = current.spec;
            serverSpec = rest;
          }
        }
        const updated = await store.tools.update(project, name, {
          ...patch,
          ...(options ? { options } : {}),
          ...(serverSpec ? { spec: serverSpec } : {}),
          ...(http ? { spec: http } : {}),
        });
        if (!updated) throw notFound('tool', name);
        await registryEvents.changed(project, 'updated', [name]);
        return toolOut(updated);
      },
    );

    app.post(
      '/projects/:project/tools/:name/approve-definition',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tools'],
          summary:
            "Approve the changed definition an MCP tool's server lists: it replaces the approved one, and calls run again",
          params: ToolParams,
          body: z
            .strictObject({
              hash: z
                .string()
                .regex(/^[0-9a-f]{64}$/)
                .optional()
                .describe(
                  'the pending definition seen (pending_definition.hash); refused if another one is pending now',
                ),
            })
            .nullish()
            .describe('optional: the body may be left out'),
          response: { 200: ToolOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const approved = await store.tools.approveDefinition(project, name, req.body?.hash);
        if (approved === undefined) throw notFound('tool', name);
        if (approved === 'none') {
          throw new ApiError('conflict', `tool ${JSON.stringify(name)} has no pending definition`);
        }
        if (approved === 'stale') {
          throw new ApiError(
            'conflict',
            `the pending definition of ${JSON.stringify(name)} is not the one named by hash: read the tool again`,
          );
        }
        req.log.info(
          { project, tool: name, definition_hash: approved.definition_hash },
          'tool definition approved',
        );
        await registryEvents.changed(project, 'updated', [name]);
        return toolOut(approved);
      },
    );

    app.delete(
      '/projects/:project/tools/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tools'],
          summary:
            'Delete a registered tool; it is detached from every agent. Usage history is kept',
          params: ToolParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, name } = req.params;
        const tool = await store.tools.get(project, name);
        if (tool && isReserved(tool)) {
          throw new ApiError(
            'reserved_name',
            `tool ${JSON.stringify(name)} is reserved and cannot be deleted; disable it instead`,
          );
        }
        if (!(await store.tools.delete(project, name))) throw notFound('tool', name);
        await registryEvents.changed(project, 'deleted', [name]);
        return reply.status(204).send(null);
      },
    );
  };
