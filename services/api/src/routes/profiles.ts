// Agent profiles: which registry tools an agent sees (names or `<target>.*` patterns), which
// internal tools it may use, its model and system prompt. Tool names are checked for shape only:
// a profile may name a tool that is registered later, and deleting a tool never breaks one.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { type AgentsStore, InternalTool, type ProfileRecord } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams } from '../schemas.ts';

/** The internal tools a profile may allow; the agent worker implements them. */
export const INTERNAL_TOOLS = Object.values(InternalTool);

export const MAX_SYSTEM_PROMPT_BYTES = 100 * 1024;

const ToolPattern = z
  .string()
  .regex(
    /^[A-Za-z0-9_-]{1,64}\.([A-Za-z0-9_-]{1,64}|\*)$/,
    'must be a tool name <target>.<tool> or a pattern <target>.*',
  );
const unique = <T>(xs: T[]) => [...new Set(xs)];
const AllowedTools = z
  .array(ToolPattern)
  .max(500)
  .transform(unique)
  .describe('tool names (`skills.run_cmd`) or whole targets (`skills.*`); duplicates are dropped');
const AllowedInternalTools = z
  .array(z.enum(InternalTool))
  .max(16)
  .transform(unique)
  .describe(`internal tools of the agent worker: ${INTERNAL_TOOLS.join(', ')}`);
const Model = z
  .string()
  .min(1)
  .max(200)
  .describe('the model to call; the worker default when null');
const SystemPrompt = z
  .string()
  .refine((s) => Buffer.byteLength(s, 'utf8') <= MAX_SYSTEM_PROMPT_BYTES, {
    message: `must be at most ${MAX_SYSTEM_PROMPT_BYTES} bytes (UTF-8)`,
  });

const ProfileOut = z
  .object({
    name: z.string(),
    allowed_tools: z.array(z.string()),
    allowed_internal_tools: z.array(z.string()),
    model: z.string().nullable(),
    system_prompt: z.string(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Profile' });

const ProfileParams = ProjectParams.extend({ name: Id });

const profileOut = (p: ProfileRecord) => ({
  name: p.name,
  allowed_tools: p.allowed_tools,
  allowed_internal_tools: p.allowed_internal_tools,
  model: p.model,
  system_prompt: p.system_prompt,
  created_at: p.created_at.toISOString(),
  updated_at: p.updated_at.toISOString(),
});
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };
const taken = (name: string) =>
  new ApiError('conflict', `profile ${JSON.stringify(name)} already exists`);

export const profileRoutes =
  ({ store, auth }: RouteDeps<AgentsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.post(
      '/projects/:project/profiles',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['profiles'],
          summary: 'Create a profile',
          params: ProjectParams,
          body: z.strictObject({
            name: Id,
            allowed_tools: AllowedTools.default([]),
            allowed_internal_tools: AllowedInternalTools.default([]),
            model: Model.optional(),
            system_prompt: SystemPrompt.default(''),
          }),
          response: { 201: ProfileOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const created = await store.profiles.create(req.params.project, req.body);
        if (!created) throw taken(req.body.name);
        return reply.status(201).send(profileOut(created));
      },
    );

    app.get(
      '/projects/:project/profiles',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['profiles'],
          summary: 'List profiles by name',
          params: ProjectParams,
          querystring: z.strictObject({
            limit: Limit,
            after: Id.optional().describe('the last name of the previous page'),
          }),
          response: { 200: z.object({ profiles: z.array(ProfileOut) }), ...errors },
        },
      },
      async (req) => ({
        profiles: (
          await store.profiles.list(req.params.project, req.query.limit, req.query.after)
        ).map(profileOut),
      }),
    );

    app.get(
      '/projects/:project/profiles/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['profiles'],
          params: ProfileParams,
          response: { 200: ProfileOut, ...errors },
        },
      },
      async (req) => {
        const p = await store.profiles.get(req.params.project, req.params.name);
        if (!p) throw notFound('profile', req.params.name);
        return profileOut(p);
      },
    );

    app.patch(
      '/projects/:project/profiles/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['profiles'],
          summary:
            'Update a profile; lists replace the old ones, `model: null` clears the model. Agents follow a rename',
          params: ProfileParams,
          body: z
            .strictObject({
              name: Id.optional(),
              allowed_tools: AllowedTools.optional(),
              allowed_internal_tools: AllowedInternalTools.optional(),
              model: Model.nullable().optional(),
              system_prompt: SystemPrompt.optional(),
            })
            .refine((b) => Object.keys(b).length > 0, { message: 'nothing to update' }),
          response: { 200: ProfileOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req) => {
        const res = await store.profiles.update(req.params.project, req.params.name, req.body);
        if (res.ok) return profileOut(res.profile);
        switch (res.reason) {
          case 'not_found':
            throw notFound('profile', req.params.name);
          case 'name_taken':
            throw taken(req.body.name ?? req.params.name);
          default:
            throw new Error(
              `unhandled profile update outcome ${String(res.reason satisfies never)}`,
            );
        }
      },
    );

    app.delete(
      '/projects/:project/profiles/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['profiles'],
          summary: 'Delete a profile no agent uses (409 names the agents that still do)',
          params: ProfileParams,
          response: { 204: z.null(), 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { name } = req.params;
        const res = await store.profiles.delete(req.params.project, name);
        if (res.ok) return reply.status(204).send(null);
        if (res.reason === 'not_found') throw notFound('profile', name);
        throw new ApiError(
          'conflict',
          `profile ${JSON.stringify(name)} is used by agents: ${res.agents.join(', ')}; move them to another profile first`,
          {
            agents: res.agents,
          },
        );
      },
    );
  };
