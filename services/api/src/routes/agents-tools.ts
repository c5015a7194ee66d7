// The tools attached to an agent, each with a per-agent config (for example a default limit the
// agent's calls start from). A tool named in the body that the registry lacks is 400
// `invalid_request`, like an unknown profile; the agent in the path missing is 404.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentsStore, AgentToolRecord } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams, ToolName } from '../schemas.ts';
import { jsonBytes } from './tools-schema.ts';
import { ApprovalOptions, RegistryChange } from '@toolmesh/protocol';

export const MAX_AGENT_TOOL_CONFIG_BYTES = 64 * 1024;

export const AgentToolOut = z
  .object({
    name: z.string(),
    description: z.string(),
    category: z.string(),
    parameters: z.record(z.string(), z.unknown()),
    enabled: z
      .boolean()
      .describe('the registry switch; a disabled tool is not offered to the agent'),
    config: z.record(z.string(), z.unknown()),
    attached_at: z.string(),
  })
  .meta({ id: 'AgentTool' });

export const agentToolOut = (t: AgentToolRecord) => ({
  name: t.name,
  description: t.description,
  category: t.category,
  parameters: t.parameters,
  enabled: t.enabled,
  config: t.config,
  attached_at: t.attached_at.toISOString(),
});

const AgentParams = ProjectParams.extend({ agent: Id });
const AgentToolParams = AgentParams.extend({ tool: ToolName });
// `approval` and `approval_timeout_ms` are read by the tool services (a call of this agent to
// this tool waits for a person): checked here like a tool's own options; other keys are free.
const Config = z
  .looseObject(ApprovalOptions)
  .refine((c) => jsonBytes(c) <= MAX_AGENT_TOOL_CONFIG_BYTES, {
    message: `must be at most ${MAX_AGENT_TOOL_CONFIG_BYTES} bytes of JSON`,
  })
  .describe(
    'per-agent settings of this tool, at most 64 KiB of JSON; `approval` ("required" or "destructive") and `approval_timeout_ms` make its calls by this agent wait for a person',
  );
const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

export const agentToolRoutes =
  ({ store, auth, registryEvents }: RouteDeps<AgentsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    /** 404 for the agent when it is missing, else for the attachment. */
    const notAttached = async (project: string, agent: string, tool: string) =>
      (await store.agents.get(project, agent))
        ? new ApiError(
            'not_found',
            `tool ${JSON.stringify(tool)} is not attached to agent ${JSON.stringify(agent)}`,
          )
        : notFound('agent', agent);

    app.post(
      '/projects/:project/agents/:agent/tools',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Attach a registry tool to an agent, with an optional per-agent config',
          params: AgentParams,
          body: z.strictObject({
            tool: ToolName.describe("the name of a tool in this project's registry"),
            config: Config.default({}),
          }),
          response: { 201: AgentToolOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project, agent } = req.params;
        const { tool, config } = req.body;
        const res = await store.agents.attachTool(project, agent, tool, config);
        if (res.ok) {
          // Tool services cache a project's approval settings: tell them they changed.
          await registryEvents.changed(project, RegistryChange.updated, [tool]);
          return reply.status(201).send(agentToolOut(res.tool));
        }
        switch (res.reason) {
          case 'no_agent':
            throw notFound('agent', agent);
          case 'no_tool':
            throw new ApiError(
              'invalid_request',
              `tool ${JSON.stringify(tool)} is not in this project's registry`,
              { tool },
            );
          case 'conflict':
            throw new ApiError(
              'conflict',
              `tool ${JSON.stringify(tool)} is already attached to agent ${JSON.stringify(agent)}; PATCH it to change its config`,
            );
          default:
            throw new Error(`unhandled attach outcome ${String(res.reason satisfies never)}`);
        }
      },
    );

    app.patch(
      '/projects/:project/agents/:agent/tools/:tool',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Replace the per-agent config of an attached tool',
          params: AgentToolParams,
          body: z.strictObject({ config: Config }),
          response: { 200: AgentToolOut, ...errors },
        },
      },
      async (req) => {
        const { project, agent, tool } = req.params;
        const updated = await store.agents.configureTool(project, agent, tool, req.body.config);
        if (updated) {
          await registryEvents.changed(project, RegistryChange.updated, [tool]);
          return agentToolOut(updated);
        }
        throw await notAttached(project, agent, tool);
      },
    );

    app.get(
      '/projects/:project/agents/:agent/tools',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'The tools attached to an agent, with their parameters and per-agent config',
          params: AgentParams,
          response: { 200: z.object({ tools: z.array(AgentToolOut) }), ...errors },
        },
      },
      async (req) => {
        const tools = await store.agents.listTools(req.params.project, req.params.agent);
        if (!tools) throw notFound('agent', req.params.agent);
        return { tools: tools.map(agentToolOut) };
      },
    );

    app.delete(
      '/projects/:project/agents/:agent/tools/:tool',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['agents'],
          summary: 'Detach a tool from an agent; the tool stays in the registry',
          params: AgentToolParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, agent, tool } = req.params;
        if (await store.agents.detachTool(project, agent, tool)) {
          await registryEvents.changed(project, RegistryChange.updated, [tool]);
          return reply.status(204).send(null);
        }
        throw await notAttached(project, agent, tool);
      },
    );
  };
