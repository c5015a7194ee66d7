// Projects, their settings and their API keys. Creating a project needs the admin key, seeds its
// tool registry and returns its first API key (shown this once; only a hash is kept). A
// project's settings override the deployment's configuration key by key (config.toml's shape).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { randomBytes } from 'node:crypto';
import { z } from 'zod';
import {
  type ApiKey,
  KeyRole,
  type Project,
  type ProjectQuotas,
  type ProjectSettings,
  type RegistryStore,
  type Store,
} from '@toolmesh/store';
import { bootstrapTools } from '../bootstrap.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams, Uuid, iso } from '../schemas.ts';

const ProjectOut = z
  .object({ id: z.string(), name: z.string(), created_at: z.string() })
  .meta({ id: 'Project' });
const KeyOut = z
  .object({
    key_id: z.string(),
    name: z.string(),
    prefix: z.string(),
    role: z.enum(KeyRole),
    created_at: z.string(),
    revoked_at: z.string().nullable(),
  })
  .meta({ id: 'ApiKey' });
const NewKeyOut = KeyOut.extend({
  key: z.string().describe('the key itself; shown only here'),
}).meta({
  id: 'NewApiKey',
});

const projectOut = (p: Project) => ({
  id: p.project_id,
  name: p.name,
  created_at: p.created_at.toISOString(),
});
const keyOut = (k: ApiKey) => ({
  key_id: k.key_id,
  name: k.name,
  prefix: k.key_prefix,
  role: k.role,
  created_at: k.created_at.toISOString(),
  revoked_at: iso(k.revoked_at),
});
const SettingsPatch = z
  .strictObject({
    tools: z
      .strictObject({
        pin_definitions: z
          .boolean()
          .nullable()
          .optional()
          .describe(
            "hold MCP tools whose definition changed until approved; null follows the deployment's [tools] pin_definitions",
          ),
        mcp_sampling_llm: z
          .boolean()
          .nullable()
          .optional()
          .describe(
            "answer an MCP server's sampling that no MCP client can answer with [llm]; null follows the deployment's [tools] mcp_sampling_llm",
          ),
      })
      .optional(),
  })
  .describe('keys to change; null removes the project value (the deployment default applies)');
const SettingsOut = z
  .object({
    settings: z
      .object({
        tools: z
          .object({
            pin_definitions: z.boolean().optional(),
            mcp_sampling_llm: z.boolean().optional(),
          })
          .optional(),
      })
      .describe("the project's own values"),
    effective: z
      .object({
        tools: z.object({ pin_definitions: z.boolean(), mcp_sampling_llm: z.boolean() }),
      })
      .describe('what applies: the project value, else the deployment default'),
  })
  .meta({ id: 'ProjectSettings' });

const quota = (what: string) =>
  z.number().int().positive().nullable().optional().describe(`${what}; null: config.toml's`);
const QuotasPatch = z
  .strictObject({
    bus_max_bytes: quota("bytes the project's command stream may hold"),
    bus_max_messages: quota("messages the project's command stream may hold"),
    bus_max_message_bytes: quota('the largest command message'),
    bus_calls_per_minute: z
      .number()
      .int()
      .nonnegative()
      .nullable()
      .optional()
      .describe("tool calls the project may start a minute, 0 for no limit; null: config.toml's"),
  })
  .meta({ id: 'ProjectQuotasPatch' });
const QuotaValues = z.object({
  bus_max_bytes: z.number(),
  bus_max_messages: z.number(),
  bus_max_message_bytes: z.number(),
  bus_calls_per_minute: z.number(),
});
const QuotasOut = z
  .object({
    quotas: QuotaValues.partial().describe("the project's own values"),
    effective: QuotaValues.describe("what applies: the project's value, else config.toml's"),
  })
  .meta({ id: 'ProjectQuotas' });

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  429: ErrorResponse,
};

export const projectRoutes =
  ({
    store,
    auth,
    config,
    projectStreams,
  }: RouteDeps<RegistryStore & Pick<Store, 'tx'>>): FastifyPluginAsyncZod =>
  async (app) => {
    const quotasOut = (own: ProjectQuotas) => ({
      quotas: own,
      effective: {
        bus_max_bytes: own.bus_max_bytes ?? config.quotas.bus_max_bytes,
        bus_max_messages: own.bus_max_messages ?? config.quotas.bus_max_messages,
        bus_max_message_bytes: own.bus_max_message_bytes ?? config.quotas.bus_max_message_bytes,
        bus_calls_per_minute: own.bus_calls_per_minute ?? config.quotas.bus_calls_per_minute,
      },
    });

    app.put(
      '/projects/:project/quotas',
      {
        onRequest: auth.requireAdmin,
        schema: {
          tags: ['projects'],
          summary:
            "Set a project's own bus quotas (admin key): [quotas] bus_max_bytes, bus_max_messages, bus_max_message_bytes, bus_calls_per_minute; null follows config.toml. Its command stream takes the new limits at once, the tool services the call rate at their next batch of tokens",
          params: ProjectParams,
          body: QuotasPatch,
          response: { 200: QuotasOut, ...errors, 503: ErrorResponse },
        },
      },
      async (req) => {
        const { project } = req.params;
        const s = await store.projects.updateSettings(project, { quotas: req.body });
        if (!s) throw notFound('project', project);
        await projectStreams.apply(project).catch((err: unknown) => {
          req.log.warn({ err, project }, 'applying the quotas to the command stream failed');
          throw new ApiError(
            'unavailable',
            'the quotas are saved but the message bus did not take them yet; send them again',
          );
        });
        req.log.info({ project, quotas: s.quotas ?? {} }, 'project quotas changed');
        return quotasOut(s.quotas ?? {});
      },
    );

    const settingsOut = (s: ProjectSettings) => ({
      settings: s,
      effective: {
        tools: {
          pin_definitions: s.tools?.pin_definitions ?? config.tools.pin_definitions,
          mcp_sampling_llm: s.tools?.mcp_sampling_llm ?? config.tools.mcp_sampling_llm,
        },
      },
    });

    app.get(
      '/projects/:project/settings',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['projects'],
          summary:
            "The project's settings: its own values, and what applies with the deployment's defaults",
          params: ProjectParams,
          response: { 200: SettingsOut, ...errors },
        },
      },
      async (req) => {
        const s = await store.projects.settings(req.params.project);
        if (!s) throw notFound('project', req.params.project);
        return settingsOut(s);
      },
    );

    app.patch(
      '/projects/:project/settings',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['projects'],
          summary:
            "Change the project's settings: tools.pin_definitions overrides [tools] pin_definitions for its MCP servers, tools.mcp_sampling_llm overrides [tools] mcp_sampling_llm (null: back to the default)",
          params: ProjectParams,
          body: SettingsPatch,
          response: { 200: SettingsOut, ...errors },
        },
      },
      async (req) => {
        const s = await store.projects.updateSettings(req.params.project, req.body);
        if (!s) throw notFound('project', req.params.project);
        req.log.info({ project: req.params.project, settings: s }, 'project settings changed');
        return settingsOut(s);
      },
    );

    app.post(
      '/projects',
      {
        onRequest: auth.requireAdmin,
        schema: {
          tags: ['projects'],
          summary: 'Create a project (admin key); returns its first API key',
          body: z.strictObject({
            id: Id.optional().describe('1-64 characters of [A-Za-z0-9_-]; generated when absent'),
            name: z.string().min(1).max(200),
            key_name: z.string().min(1).max(200).default('default'),
          }),
          response: {
            201: z.object({ project: ProjectOut, key: NewKeyOut }),
            409: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req, reply) => {
        const id = req.body.id ?? `p_${randomBytes(8).toString('hex')}`;
        const created = await store.tx(async (tx) => {
          const project = await tx.projects.create(id, req.body.name);
          if (!project) return undefined;
          await tx.tools.seed(id, bootstrapTools());
          const key = await tx.projects.createKey(id, req.body.key_name);
          return { project, key };
        });
        if (!created)
          throw new ApiError('conflict', `project ${JSON.stringify(id)} already exists`);
        // Its command stream now, so the services' consumers are there before its first call;
        // failing that, its first publish (or the next start's reconcile) makes it.
        await projectStreams
          .apply(id)
          .catch((err: unknown) =>
            req.log.warn({ err, project: id }, 'making the project command stream failed'),
          );
        return reply.status(201).send({
          project: projectOut(created.project),
          key: { ...keyOut(created.key.record), key: created.key.key },
        });
      },
    );

    app.get(
      '/projects',
      {
        onRequest: auth.requireKey,
        schema: {
          tags: ['projects'],
          summary: 'List projects: all of them for the admin key, its own for a project key',
          querystring: z.strictObject({ limit: Limit, after: Id.optional() }),
          response: { 200: z.object({ projects: z.array(ProjectOut) }), ...errors },
        },
      },
      async (req) => {
        const p = req.principal;
        if (p?.kind === 'project') {
          const own = await store.projects.get(p.projectId);
          return { projects: own ? [projectOut(own)] : [] };
        }
        const list = await store.projects.list(req.query.limit, req.query.after);
        return { projects: list.map(projectOut) };
      },
    );

    app.get(
      '/projects/:project',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['projects'],
          params: ProjectParams,
          response: { 200: ProjectOut, ...errors },
        },
      },
      async (req) => {
        const p = await store.projects.get(req.params.project);
        if (!p) throw notFound('project', req.params.project);
        return projectOut(p);
      },
    );

    app.post(
      '/projects/:project/keys',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['keys'],
          summary: 'Create an API key; the key is shown only in this response',
          description:
            'role admin (the default) may do everything in the project; role caller may call tools, start tasks, read the tool registry, and read and cancel only the executions and tasks it started (403 forbidden elsewhere).',
          params: ProjectParams,
          body: z.strictObject({
            name: z.string().min(1).max(200),
            role: z.enum(KeyRole).default(KeyRole.admin),
          }),
          response: {
            201: NewKeyOut,
            409: ErrorResponse.describe('key_limit: [api] max_keys_per_project active keys'),
            ...errors,
          },
        },
      },
      async (req, reply) => {
        // Bounded: each key has a rate limit of its own, so unbounded keys would be an unbounded
        // rate for the project.
        const max = config.api.max_keys_per_project;
        const created = await store.projects.createKeyWithin(
          req.params.project,
          req.body.name,
          req.body.role,
          max,
        );
        if (!created) {
          throw new ApiError(
            'key_limit',
            `this project holds ${max} active API keys already ([api] max_keys_per_project); revoke one first`,
            { limit: max, setting: 'api.max_keys_per_project' },
          );
        }
        return reply.status(201).send({ ...keyOut(created.record), key: created.key });
      },
    );

    app.get(
      '/projects/:project/keys',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['keys'],
          params: ProjectParams,
          response: { 200: z.object({ keys: z.array(KeyOut) }), ...errors },
        },
      },
      async (req) => ({ keys: (await store.projects.listKeys(req.params.project)).map(keyOut) }),
    );

    app.delete(
      '/projects/:project/keys/:key_id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['keys'],
          summary: 'Revoke an API key; it stops working at once',
          params: ProjectParams.extend({ key_id: Uuid }),
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        if (!(await store.projects.revokeKey(req.params.project, req.params.key_id))) {
          throw notFound('key', req.params.key_id);
        }
        await auth.keyRevoked(req.params.project, req.params.key_id);
        return reply.status(204).send(null);
      },
    );
  };
