// Agents of a project: an id (it appears in NATS subjects, so it is a plain token), a display
// name and an optional profile, named by its profile name. Names in a body that resolve to
// nothing (a profile here, a tool in agents-tools.ts) are 400 `invalid_request`; a resource in
// the path that does not exist is 404.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentRecord, AgentsStore, AgentWrite } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams } from '../schemas.ts';
import { AgentToolOut, agentToolOut, agentToolRoutes } from './agents-tools.ts';

const AgentName = z.string().min(1).max(200);
const ProfileRef = Id.describe('the name of a profile of this project');

const AgentOut = z
  .object({
    id: z.string(),
    name: z.string(),
    profile: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Agent' });
const AgentDetailsOut = AgentOut.extend({ tools: z.array(AgentToolOut) }).meta({
  id: 'AgentDetails',
});

const AgentParams = ProjectParams.extend({ agent: Id });

const agentOut = (a: AgentRecord) => ({
  id: a.agent_id,
  name: a.name,
  profile: a.profile,
  created_at: a.created_at.toISOString(),
  updated_at: a.updated_at.toISOString(),
});
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

function failed(
  res: Exclude<AgentWrite, { ok: true }>,
  agent: string,
  profile: string | null | undefined,
): ApiError {
  switch (res.reason) {
    case 'conflict':
      return new ApiError('conflict', `agent ${JSON.stringify(agent)} already exists`);
    case 'not_found':
      return notFound('agent', agent);
    case 'unknown_profile':
      return new ApiError(
        'invalid_request',
        `profile ${JSON.stringify(profile)} does not exist in this project`,
        {
          profile,
        },
      );
    default:
      throw new Error(`unhandled agent write outcome ${String(res.reason satisfies never)}`);
  }
}

export const agentRoutes =
  (deps: RouteDeps<AgentsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const { store, auth } = deps;
    // Registered from here so app.ts has one line per route group; the prefix carries over.
    await app.register(agentToolRoutes(deps));
    app.post(
      '/projects/:project/agents',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Create an agent',
          params: ProjectParams,
          body: z.strictObject({
            id: Id.describe('1-64 characters of [A-Za-z0-9_-]; appears in NATS subjects'),
            name: AgentName.optional().describe('display name; the id when absent'),
            profile: ProfileRef.optional(),
          }),
          response: { 201: AgentOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { id, name, profile } = req.body;
        const res = await store.agents.create(req.params.project, {
          agentId: id,
          name: name ?? id,
          profile,
        });
        if (!res.ok) throw failed(res, id, profile);
        return reply.status(201).send(agentOut(res.agent));
      },
    );

    app.get(
      '/projects/:project/agents',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'List agents by id, optionally those of one profile',
          params: ProjectParams,
          querystring: z.strictObject({
            profile: ProfileRef.optional(),
            limit: Limit,
            after: Id.optional().describe('the last id of the previous page'),
          }),
          response: { 200: z.object({ agents: z.array(AgentOut) }), ...errors },
        },
      },
      async (req) => ({
        agents: (await store.agents.list(req.params.project, req.query)).map(agentOut),
      }),
    );

    app.get(
      '/projects/:project/agents/:agent',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'An agent with its profile name and attached tools',
          params: AgentParams,
          response: { 200: AgentDetailsOut, ...errors },
        },
      },
      async (req) => {
        const { project, agent } = req.params;
        const [a, tools] = await Promise.all([
          store.agents.get(project, agent),
          store.agents.listTools(project, agent),
        ]);
        if (!a) throw notFound('agent', agent);
        return { ...agentOut(a), tools: (tools ?? []).map(agentToolOut) };
      },
    );

    app.patch(
      '/projects/:project/agents/:agent',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Rename an agent or change its profile (`profile: null` removes it)',
          params: AgentParams,
          body: z
            .strictObject({ name: AgentName.optional(), profile: ProfileRef.nullable().optional() })
            .refine((b) => Object.keys(b).length > 0, { message: 'nothing to update' }),
          response: { 200: AgentOut, ...errors },
        },
      },
      async (req) => {
        const { project, agent } = req.params;
        const res = await store.agents.update(project, agent, req.body);
        if (!res.ok) throw failed(res, agent, req.body.profile);
        return agentOut(res.agent);
      },
    );

    app.delete(
      '/projects/:project/agents/:agent',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Delete an agent with its tool attachments and tasks',
          params: AgentParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        if (!(await store.agents.delete(req.params.project, req.params.agent))) {
          throw notFound('agent', req.params.agent);
        }
        return reply.status(204).send(null);
      },
    );
  };
