// Tasks for agents. Starting one writes the task and its inbox row in one statement, then
// publishes the agent's wakeup: the row comes first so that an agent woken for any reason finds
// the task, and a wakeup that cannot be published loses nothing (the task waits in the inbox
// for the agent's next wakeup; the answer says it was not woken).
import { Buffer } from 'node:buffer';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Header, createSubjects, encodeMessage } from '@toolmesh/protocol';
import { streamPublisher } from '@toolmesh/stream-publish';
import { type AgentsStore, type CallsStore, type Task, TaskState } from '@toolmesh/store';
import { SpanKind, contextFromHeaders, traceHeaders, withSpan } from '@toolmesh/telemetry';
import { callerKeyOf, keyIdOf } from '../auth.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams, Uuid, iso } from '../schemas.ts';
import { CardOut, cardOut } from './cards.ts';
import { wakeAgent } from './wakeup.ts';

/** Largest task input, as JSON; a task is a prompt and its context, not a payload store. */
export const TASK_INPUT_MAX_BYTES = 65_536;

export const TaskInput = z
  .union([z.string().min(1), z.record(z.string(), z.unknown())])
  .refine((v) => Buffer.byteLength(JSON.stringify(v)) <= TASK_INPUT_MAX_BYTES, {
    message: `must be at most ${TASK_INPUT_MAX_BYTES} bytes as JSON`,
  })
  .describe('a prompt, or an object of structured input');

const TaskOut = z
  .object({
    task_id: z.string(),
    agent_id: z.string(),
    channel: z.string(),
    status: z.enum(TaskState),
    input: z.unknown(),
    error: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    final_card: CardOut.nullable().describe('the final answer, once finished'),
  })
  .meta({ id: 'Task' });

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  429: ErrorResponse,
};

/** A caller's own `traceparent` header makes the task a part of the caller's trace. */
const callerTrace = (headers: Record<string, string | string[] | undefined>) =>
  contextFromHeaders((name) => {
    const v = headers[name];
    return typeof v === 'string' ? v : undefined;
  });

export const taskRoutes =
  ({ store, auth, nc, config }: RouteDeps<CallsStore & AgentsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const subjects = createSubjects(config.nats.subject_root);
    const publisher = streamPublisher(nc);

    app.post(
      '/projects/:project/agents/:agent/tasks',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['tasks'],
          summary: 'Start a task for an agent: file it in the inbox, then wake the agent',
          params: ProjectParams.extend({ agent: Id }),
          body: z.strictObject({ input: TaskInput, channel: Id.default('api') }),
          response: {
            202: z
              .object({
                task_id: z.string(),
                status: z.enum(TaskState),
                woken: z
                  .boolean()
                  .describe(
                    'false: the wakeup could not be published; the task waits in the inbox',
                  ),
              })
              .meta({ id: 'TaskStarted' }),
            ...errors,
          },
        },
      },
      (req, reply) =>
        withSpan(
          'task create',
          {
            kind: SpanKind.SERVER,
            parent: callerTrace(req.headers),
            attributes: {
              'http.request.method': 'POST',
              'http.route': '/v1/projects/:project/agents/:agent/tasks',
              'toolmesh.project': req.params.project,
              'toolmesh.agent_id': req.params.agent,
            },
          },
          async (span) => {
            const { project, agent } = req.params;
            const { input, channel } = req.body;
            // The task and its inbox row in one statement.
            const task = await store.tasks.createInInbox(
              {
                projectId: project,
                agentId: agent,
                channel,
                input,
                // Steps the worker's scan starts (no wakeup to carry it) join the task's trace.
                traceparent: traceHeaders()[Header.traceparent],
                // A caller key sees this task and the executions of its calls.
                keyId: keyIdOf(req),
              },
              { channel },
            );
            if (!task) throw notFound('agent', agent);
            span.setAttribute('toolmesh.task_id', task.task_id);

            const woken = await wakeAgent(
              publisher,
              subjects,
              { project, channel, agent, taskId: task.task_id },
              req.log,
            );
            return reply.status(202).send({ task_id: task.task_id, status: task.status, woken });
          },
        ),
    );

    app.post(
      '/projects/:project/tasks/:task_id/cancel',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['tasks'],
          summary:
            'Cancel a task: its turn stops, its running tool calls are canceled, the task ends canceled',
          params: ProjectParams.extend({ task_id: Uuid }),
          body: z
            .strictObject({ reason: z.string().min(1).max(500).optional() })
            .optional()
            .describe('why, kept in the final card'),
          response: {
            200: TaskOut.extend({
              canceled_calls: z
                .array(z.object({ tool_call_id: z.string(), tool_name: z.string() }))
                .describe('tool calls of the turn that were still running, each sent a cancel'),
            }).meta({ id: 'TaskCanceled' }),
            409: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req) => {
        const { project, task_id } = req.params;
        const reason = req.body?.reason ?? 'canceled by request';
        const caller = callerKeyOf(req);
        if (caller !== undefined && (await store.tasks.get(project, task_id))?.key_id !== caller)
          throw notFound('task', task_id);
        const out = await store.tasks.cancel(project, task_id, reason, `api:${project}`);
        if (out.kind === 'not_found') throw notFound('task', task_id);
        if (out.kind === 'finished')
          throw new ApiError('conflict', `task ${task_id} already ended ${out.status}`, {
            status: out.status,
          });
        const { agent_id: agent, channel } = out.task;
        // Cancels go to every tool service instance; one that has not started a call yet
        // remembers the cancel and ends the call canceled when it arrives. A lost cancel only
        // lets a call run to its end: its result is ignored, since the turn has ended.
        const cancelSubject = subjects.cancel({ project, channel });
        for (const c of out.calls) {
          try {
            await publisher.publish(
              cancelSubject,
              encodeMessage('cancel', {
                v: 1,
                tool_call_id: c.tool_call_id,
                reason: `task ${task_id} canceled`,
              }),
            );
          } catch (err) {
            req.log.warn({ err, tool_call_id: c.tool_call_id }, 'publishing a call cancel failed');
          }
        }
        try {
          await publisher.publish(
            subjects.agentEvent({ project, channel, agent, event: 'task' }),
            encodeMessage('agent_task', {
              v: 1,
              agent_id: agent,
              task_id,
              status: 'canceled',
              card_id: out.card.card_id,
              error: { code: 'canceled', message: reason },
            }),
          );
        } catch (err) {
          req.log.warn({ err, task_id }, 'publishing the task canceled event failed');
        }
        if (out.next) {
          // The thread's next message started as this turn ended: announced, then a worker is
          // woken to run it (a lost wakeup leaves it to the workers' scan).
          const { taskId, channel: nextChannel } = out.next;
          try {
            await publisher.publish(
              subjects.agentEvent({ project, channel: nextChannel, agent, event: 'task' }),
              encodeMessage('agent_task', {
                v: 1,
                agent_id: agent,
                task_id: taskId,
                status: 'running',
              }),
            );
          } catch (err) {
            req.log.warn({ err, task_id: taskId }, 'publishing the task running event failed');
          }
          await wakeAgent(
            publisher,
            subjects,
            { project, channel: nextChannel, agent, taskId, started: true },
            req.log,
          );
        }
        const task = await store.tasks.get(project, task_id);
        return { ...taskOut(task!, cardOut(out.card)), canceled_calls: out.calls };
      },
    );

    app.get(
      '/projects/:project/tasks/:task_id',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['tasks'],
          summary: "A task's status, with its final card once finished",
          params: ProjectParams.extend({ task_id: Uuid }),
          response: { 200: TaskOut, ...errors },
        },
      },
      async (req) => {
        const { project, task_id } = req.params;
        const task = await store.tasks.get(project, task_id);
        const caller = callerKeyOf(req);
        if (!task || (caller !== undefined && task.key_id !== caller))
          throw notFound('task', task_id);
        const card = task.final_card_id
          ? await store.cards.byId(project, task.final_card_id)
          : undefined;
        return taskOut(task, card ? cardOut(card) : null);
      },
    );
  };

function taskOut(t: Task, finalCard: z.infer<typeof CardOut> | null) {
  return {
    task_id: t.task_id,
    agent_id: t.agent_id,
    channel: t.channel,
    status: t.status,
    input: t.input,
    error: t.error,
    created_at: t.created_at.toISOString(),
    updated_at: iso(t.updated_at) ?? t.created_at.toISOString(),
    final_card: finalCard,
  };
}
