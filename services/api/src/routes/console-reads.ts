// Reads the operator console needs beyond the other routes: a project's recent tasks, a task's
// turn as a timeline (model steps, tool calls with their results, the final card), recent
// artifacts, a call's arguments, and executions per minute for the metrics charts.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { AgentsStore, CoreStore, OpsStore } from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams, Uuid } from '../schemas.ts';
import { CardOut, cardOut } from './cards.ts';

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };

const TaskListItem = z
  .object({
    task_id: z.string(),
    agent_id: z.string(),
    channel: z.string(),
    status: z.string(),
    final_card_id: z.string().nullable(),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'TaskListItem' });

const TimelineCall = z.object({
  tool_call_id: z.string(),
  tool_name: z.string(),
  epoch: z.number().int(),
  status: z.string().describe('pending, done or timeout'),
  arguments: z.record(z.string(), z.unknown()),
  published_at: z.string().nullable(),
  result: CardOut.nullable(),
});

const Timeline = z
  .object({
    task_id: z.string(),
    turn: z
      .object({
        turn_id: z.string(),
        status: z.string(),
        step: z.number().int(),
        epoch: z.number().int(),
        created_at: z.string(),
        updated_at: z.string(),
      })
      .nullable()
      .describe('null until a worker picked the task up'),
    cards: z.array(CardOut).describe("the turn's cards in order: messages, calls and the final"),
    calls: z.array(TimelineCall),
  })
  .meta({ id: 'TaskTimeline' });

const ArtifactListItem = z
  .object({
    artifact_id: z.string(),
    filename: z.string(),
    mime: z.string(),
    size_bytes: z.number(),
    tool_call_id: z.string().nullable(),
    created_at: z.string(),
    download_url: z.string(),
  })
  .meta({ id: 'ArtifactListItem' });

const PerMinute = z
  .object({
    since: z.string(),
    minutes: z.array(
      z.object({
        minute: z.string(),
        calls: z.number().int(),
        failed: z.number().int(),
        p50_ms: z.number().nullable(),
        p95_ms: z.number().nullable(),
      }),
    ),
    by_tool: z.array(
      z.object({
        tool: z.string(),
        calls: z.number().int(),
        failed: z.number().int(),
        failure_rate: z.number(),
      }),
    ),
  })
  .meta({ id: 'ExecutionsPerMinute' });

/** The service name sandbox-reaper instances heartbeat under, once per pass. */
const REAPER_SERVICE = 'sandbox-reaper';

const ReaperStatus = z
  .object({
    instances: z.number().int().describe('reaper instances that have heartbeated'),
    last_pass_at: z
      .string()
      .nullable()
      .describe("when the latest reaper pass began (its heartbeat), by the database's clock"),
    last_pass_ago_ms: z.number().nullable(),
  })
  .meta({ id: 'ReaperStatus' });

export const consoleReadRoutes =
  ({ store, auth }: RouteDeps<CoreStore & AgentsStore & OpsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/projects/:project/tasks',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tasks'],
          summary: "The project's tasks, newest first",
          params: ProjectParams,
          querystring: z.strictObject({ agent: Id.optional(), limit: Limit }),
          response: { 200: z.object({ tasks: z.array(TaskListItem) }), ...errors },
        },
      },
      async (req) => {
        const rows = await store.consoleReads.tasks(
          req.params.project,
          req.query.agent,
          req.query.limit,
        );
        return {
          tasks: rows.map((t) => ({
            ...t,
            created_at: t.created_at.toISOString(),
            updated_at: t.updated_at.toISOString(),
          })),
        };
      },
    );

    app.get(
      '/projects/:project/tasks/:task_id/timeline',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['tasks'],
          summary: "A task's turn as a timeline: model steps, tool calls, results, final card",
          params: ProjectParams.extend({ task_id: Uuid }),
          response: { 200: Timeline, ...errors },
        },
      },
      async (req) => {
        const { project, task_id } = req.params;
        const task = await store.tasks.get(project, task_id);
        if (!task) throw notFound('task', task_id);
        const turn = await store.turns.byTask(project, task_id);
        if (!turn) return { task_id, turn: null, cards: [], calls: [] };
        const { cards, calls, results } = await store.turns.conversation(turn);
        return {
          task_id,
          turn: {
            turn_id: turn.turn_id,
            status: turn.status,
            step: turn.step,
            epoch: turn.epoch,
            created_at: turn.created_at.toISOString(),
            updated_at: turn.updated_at.toISOString(),
          },
          cards: cards.map(cardOut),
          calls: calls.map((c) => {
            const result = results.get(c.tool_call_id);
            return {
              tool_call_id: c.tool_call_id,
              tool_name: c.tool_name,
              epoch: c.epoch,
              status: c.status,
              arguments: c.arguments,
              published_at: c.published_at?.toISOString() ?? null,
              result: result ? cardOut(result) : null,
            };
          }),
        };
      },
    );

    app.get(
      '/projects/:project/artifacts',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['artifacts'],
          summary: "The project's artifacts, newest first",
          params: ProjectParams,
          querystring: z.strictObject({ limit: Limit }),
          response: { 200: z.object({ artifacts: z.array(ArtifactListItem) }), ...errors },
        },
      },
      async (req) => {
        const { project } = req.params;
        const rows = await store.consoleReads.artifacts(project, req.query.limit);
        return {
          artifacts: rows.map((a) => ({
            ...a,
            created_at: a.created_at.toISOString(),
            download_url: `/v1/projects/${project}/artifacts/${a.artifact_id}/content`,
          })),
        };
      },
    );

    app.get(
      '/projects/:project/executions/:id/arguments',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['executions'],
          summary: "A call's arguments, when an agent's turn made it (its tool.call card)",
          description:
            'A call no agent made has no tool.call card: 404 (its execution keeps the arguments: GET /executions/{id}).',
          params: ProjectParams.extend({ id: z.string().min(1).max(200) }),
          response: { 200: z.object({ arguments: z.unknown() }), ...errors },
        },
      },
      async (req) => {
        const { project, id } = req.params;
        const args = await store.consoleReads.callArguments(project, id);
        if (args === undefined || args === null) throw notFound('call arguments', id);
        return { arguments: args };
      },
    );

    app.get(
      '/projects/:project/sandboxes/reaper',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['sandboxes'],
          summary: "The sandbox-reaper's last pass (deployment-wide; no instance details)",
          params: ProjectParams,
          response: { 200: ReaperStatus, ...errors },
        },
      },
      async () => {
        const rows = await store.instances.list(REAPER_SERVICE);
        const latest = rows.reduce<(typeof rows)[number] | undefined>(
          (a, r) => (!a || r.seen_ago_ms < a.seen_ago_ms ? r : a),
          undefined,
        );
        return {
          instances: rows.length,
          last_pass_at: latest?.last_seen_at.toISOString() ?? null,
          last_pass_ago_ms: latest ? Math.round(latest.seen_ago_ms) : null,
        };
      },
    );

    app.get(
      '/projects/:project/executions/per-minute',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['executions'],
          summary: 'Calls, failures and p50/p95 duration per minute, and failure rate by tool',
          params: ProjectParams,
          querystring: z.strictObject({
            minutes: z.coerce.number().int().min(1).max(1440).default(60),
          }),
          response: { 200: PerMinute, ...errors },
        },
      },
      async (req) => {
        const { project } = req.params;
        const since = new Date(Date.now() - req.query.minutes * 60_000);
        const [minutes, tools] = await Promise.all([
          store.consoleReads.perMinute(project, since),
          store.consoleReads.failuresByTool(project, since),
        ]);
        return {
          since: since.toISOString(),
          minutes: minutes.map((m) => ({ ...m, minute: m.minute.toISOString() })),
          by_tool: tools.map((t) => ({
            tool: t.tool_name,
            calls: t.calls,
            failed: t.failed,
            failure_rate: t.calls > 0 ? t.failed / t.calls : 0,
          })),
        };
      },
    );
  };
