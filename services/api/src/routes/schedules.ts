// Schedules: a cron pattern in a time zone that fires a tool call or an agent task. Created,
// listed, paused, resumed and deleted here; fired by the scheduler every api instance runs
// (../schedules/scheduler.ts). A schedule's tool and arguments are checked as a call's are, once,
// when it is created.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  type AgentsStore,
  CatchUp,
  type Firing,
  type RegistryStore,
  type Schedule,
} from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { InvalidScheduleError, assertCronFields, cronOf, nextTick } from '../schedules/ticks.ts';
import { Id, Limit, ProjectParams, ToolName, iso } from '../schemas.ts';
import { createArgumentsChecker } from './executions-args.ts';
import { TaskInput } from './tasks.ts';

const ScheduleParams = ProjectParams.extend({ name: Id });

const FiringOut = z
  .object({
    tick_at: z.string(),
    fired_at: z.string(),
    tool_call_id: z.string().nullable().describe('the call this tick made (a tool schedule)'),
    task_id: z.string().nullable().describe('the task this tick started (an agent schedule)'),
    missed: z.number().int().describe('missed ticks this firing stands for (catch_up = once)'),
    published: z.boolean(),
  })
  .meta({ id: 'ScheduleFiring' });

const ScheduleOut = z
  .object({
    name: z.string(),
    cron: z.string(),
    timezone: z.string(),
    tool: z.string().nullable(),
    arguments: z.record(z.string(), z.unknown()).nullable(),
    agent: z.string().nullable(),
    input: z.unknown(),
    channel: z.string(),
    catch_up: z.enum(CatchUp),
    paused: z.boolean(),
    next_fire_at: z.string().nullable().describe('the next tick; null while paused'),
    last_fire_at: z.string().nullable().describe('the last tick that fired'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Schedule' });

const scheduleOut = (s: Schedule) => ({
  name: s.name,
  cron: s.cron,
  timezone: s.timezone,
  tool: s.tool,
  arguments: s.arguments,
  agent: s.agent_id,
  input: s.input,
  channel: s.channel,
  catch_up: s.catch_up,
  paused: s.paused,
  next_fire_at: iso(s.next_fire_at),
  last_fire_at: iso(s.last_fire_at),
  created_at: s.created_at.toISOString(),
  updated_at: s.updated_at.toISOString(),
});

const firingOut = (f: Firing) => ({
  tick_at: f.tick_at.toISOString(),
  fired_at: f.fired_at.toISOString(),
  tool_call_id: f.tool_call_id,
  task_id: f.task_id,
  missed: f.missed,
  published: f.published_at !== null,
});

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

const invalid = (message: string, details?: Record<string, unknown>) =>
  new ApiError({ code: 'invalid_schedule', status: 400 }, message, details);

export const scheduleRoutes =
  ({ store, auth, config }: RouteDeps<RegistryStore & AgentsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const checker = createArgumentsChecker({ maxDepth: config.tools.max_arguments_depth });

    /** The next tick after `after`, or a 400 naming the bad field. */
    const tickAfter = (cron: string, timezone: string, after: Date, created = false) => {
      try {
        if (created) assertCronFields(cron);
        cronOf(cron, timezone);
        return nextTick(cron, timezone, after);
      } catch (err) {
        if (err instanceof InvalidScheduleError) throw invalid(err.message, { field: err.field });
        throw err;
      }
    };

    app.post(
      '/projects/:project/schedules',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['schedules'],
          summary: 'Create a schedule that fires a tool call or an agent task on a cron pattern',
          params: ProjectParams,
          body: z.strictObject({
            name: Id,
            cron: z
              .string()
              .min(1)
              .max(200)
              .describe('5 fields (minute precision) or 6 (seconds first), as croner reads them'),
            timezone: z.string().min(1).max(64).default('UTC').describe('an IANA time zone'),
            tool: ToolName.optional().describe('the tool to call (or `agent`)'),
            arguments: z.record(z.string(), z.unknown()).default({}),
            agent: Id.optional().describe('the agent to give a task (or `tool`)'),
            input: TaskInput.optional().describe("the agent task's input"),
            channel: Id.default('schedules'),
            catch_up: z
              .enum(CatchUp)
              .default('skip')
              .describe('ticks missed while nothing ran: `skip` them, or fire `once` for them'),
            paused: z.boolean().default(false),
          }),
          response: { 201: ScheduleOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        const b = req.body;
        if ((b.tool === undefined) === (b.agent === undefined)) {
          throw invalid('give exactly one of `tool` (with `arguments`) or `agent` (with `input`)');
        }
        if (b.agent !== undefined && b.input === undefined) {
          throw invalid('an agent schedule needs `input`, the task it starts');
        }
        const next = tickAfter(b.cron, b.timezone, new Date(), true);
        if (b.tool !== undefined) {
          const tool = await store.tools.get(project, b.tool);
          if (!tool) throw notFound('tool', b.tool);
          const issues = checker.check(tool, b.arguments);
          if (issues) {
            throw new ApiError(
              { code: 'invalid_arguments', status: 400 },
              `invalid arguments for ${tool.name}: ${issues[0]?.path}: ${issues[0]?.message}`,
              { issues },
            );
          }
        } else if (!(await store.agents.get(project, b.agent as string))) {
          throw notFound('agent', b.agent as string);
        }
        const limit = config.schedules.max_per_project;
        if ((await store.schedules.count(project)) >= limit) {
          throw new ApiError(
            { code: 'quota_exceeded', status: 409 },
            `project has ${limit} schedules, the most allowed ([schedules] max_per_project)`,
            { quota: 'schedules', limit },
          );
        }
        const created = await store.schedules.create({
          projectId: project,
          name: b.name,
          cron: b.cron,
          timezone: b.timezone,
          kind: b.tool !== undefined ? 'tool' : 'agent',
          tool: b.tool,
          arguments: b.tool !== undefined ? b.arguments : undefined,
          agentId: b.agent,
          input: b.input,
          channel: b.channel,
          catchUp: b.catch_up,
          paused: b.paused,
          nextFireAt: b.paused ? null : next,
        });
        if (!created) throw new ApiError('conflict', `schedule ${JSON.stringify(b.name)} exists`);
        return reply.status(201).send(scheduleOut(created));
      },
    );

    app.get(
      '/projects/:project/schedules',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['schedules'],
          summary: "The project's schedules by name, paged",
          params: ProjectParams,
          querystring: z.strictObject({ limit: Limit, after: Id.optional() }),
          response: {
            200: z.object({ schedules: z.array(ScheduleOut), next: z.string().nullable() }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { limit, after } = req.query;
        const rows = await store.schedules.list(req.params.project, { limit: limit + 1, after });
        const page = rows.slice(0, limit);
        return {
          schedules: page.map(scheduleOut),
          next: rows.length > limit ? (page.at(-1)?.name ?? null) : null,
        };
      },
    );

    app.get(
      '/projects/:project/schedules/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['schedules'],
          summary: 'A schedule with its last and next run and its recent firings',
          params: ScheduleParams,
          querystring: z.strictObject({
            firings: z.coerce.number().int().min(0).max(500).default(20),
          }),
          response: {
            200: ScheduleOut.extend({ firings: z.array(FiringOut) }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { project, name } = req.params;
        const s = await store.schedules.get(project, name);
        if (!s) throw notFound('schedule', name);
        const firings = await store.schedules.firings(project, name, req.query.firings);
        return { ...scheduleOut(s), firings: firings.map(firingOut) };
      },
    );

    for (const action of ['pause', 'resume'] as const) {
      app.post(
        `/projects/:project/schedules/:name/${action}`,
        {
          onRequest: auth.requireProject,
          schema: {
            tags: ['schedules'],
            summary:
              action === 'pause'
                ? 'Pause a schedule: no tick fires until it is resumed'
                : 'Resume a schedule from its next tick (ticks while paused do not fire)',
            params: ScheduleParams,
            response: { 200: ScheduleOut, ...errors },
          },
        },
        async (req) => {
          const { project, name } = req.params;
          const s = await store.schedules.get(project, name);
          if (!s) throw notFound('schedule', name);
          const next = action === 'pause' ? null : tickAfter(s.cron, s.timezone, new Date());
          const updated = await store.schedules.setPaused(project, name, action === 'pause', next);
          if (!updated) throw notFound('schedule', name);
          return scheduleOut(updated);
        },
      );
    }

    app.delete(
      '/projects/:project/schedules/:name',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['schedules'],
          summary: 'Delete a schedule and its firing history (the calls and tasks it made stay)',
          params: ScheduleParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, name } = req.params;
        if (!(await store.schedules.delete(project, name))) throw notFound('schedule', name);
        return reply.status(204).send(null);
      },
    );
  };
