// Threads: conversations with an agent. Opening one makes an empty thread; each message is an
// agent task of the thread, filed with its inbox row and numbered in one transaction (the thread
// row is locked meanwhile, so numbers follow the order messages were accepted), then the agent
// is woken as for any task. The worker runs one turn of a thread at a time, in that order, and
// shows the model the thread's earlier turns (see docs/agents.md, "Threads: conversations").
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { Header, createSubjects } from '@toolmesh/protocol';
import { streamPublisher } from '@toolmesh/stream-publish';
import {
  type AgentsStore,
  type Card,
  type Store,
  TaskState,
  type Thread,
  type ThreadTurn,
} from '@toolmesh/store';
import { traceHeaders } from '@toolmesh/telemetry';
import { keyIdOf } from '../auth.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams, Uuid } from '../schemas.ts';
import { CardOut, cardOut } from './cards.ts';
import { TaskInput } from './tasks.ts';
import { wakeAgent } from './wakeup.ts';

const errors = { 400: ErrorResponse, 401: ErrorResponse, 404: ErrorResponse };
const AgentParams = ProjectParams.extend({ agent: Id });
const ThreadParams = AgentParams.extend({ thread_id: Uuid });

const ThreadOut = z
  .object({
    thread_id: z.string(),
    agent_id: z.string(),
    channel: z.string(),
    title: z.string().nullable(),
    messages: z.number().int().describe('messages sent to the thread so far'),
    created_at: z.string(),
    updated_at: z.string(),
  })
  .meta({ id: 'Thread' });

const ThreadTurnOut = z
  .object({
    seq: z.number().int().describe("the message's number in the thread, from 1"),
    task_id: z.string(),
    status: z.enum(TaskState).describe('pending: waits for the turn before it'),
    input: z.unknown(),
    error: z.record(z.string(), z.unknown()).nullable(),
    created_at: z.string(),
    updated_at: z.string(),
    turn: z
      .object({ turn_id: z.string(), status: z.string(), step: z.number().int() })
      .nullable()
      .describe('null while the message waits'),
    cards: z
      .array(CardOut)
      .describe("the turn's cards in order: the message, the model's answers, calls, results"),
    final_card: CardOut.nullable().describe('the answer, once the turn ended'),
  })
  .meta({ id: 'ThreadTurn' });

const ThreadDetail = ThreadOut.extend({
  turns: z.array(ThreadTurnOut).describe('oldest first'),
  next_before: z
    .number()
    .int()
    .nullable()
    .describe('pass as `before` for the older turns; null when these are the first'),
}).meta({ id: 'ThreadDetail' });

const threadOut = (t: Thread) => ({
  thread_id: t.thread_id,
  agent_id: t.agent_id,
  channel: t.channel,
  title: t.title,
  messages: t.messages,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
});

/** A turn's own cards with the results of its calls (written by the tools), in time order. */
function turnCards(t: ThreadTurn): Card[] {
  const all = new Map<string, Card>();
  for (const c of t.conversation.cards) all.set(c.card_id, c);
  for (const c of t.conversation.results.values()) all.set(c.card_id, c);
  if (t.final) all.set(t.final.card_id, t.final);
  return [...all.values()].sort(
    (a, b) => a.created_at.getTime() - b.created_at.getTime() || a.card_id.localeCompare(b.card_id),
  );
}

const turnOut = (t: ThreadTurn) => ({
  seq: t.seq,
  task_id: t.task_id,
  status: t.status,
  input: t.input,
  error: t.error,
  created_at: t.created_at.toISOString(),
  updated_at: t.updated_at.toISOString(),
  turn: t.turn,
  cards: turnCards(t).map(cardOut),
  final_card: t.final ? cardOut(t.final) : null,
});

export const threadRoutes =
  ({
    store,
    auth,
    nc,
    config,
  }: RouteDeps<AgentsStore & Pick<Store, 'tx'>>): FastifyPluginAsyncZod =>
  async (app) => {
    const subjects = createSubjects(config.nats.subject_root);
    const publisher = streamPublisher(nc);

    app.post(
      '/projects/:project/agents/:agent/threads',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['threads'],
          summary: 'Open a thread: a conversation with the agent, one message at a time',
          params: AgentParams,
          body: z
            .strictObject({
              title: z.string().min(1).max(200).optional(),
              channel: Id.default('api').describe("the channel of the thread's turns"),
            })
            .default({ channel: 'api' }),
          response: { 201: ThreadOut, ...errors },
        },
      },
      async (req, reply) => {
        const { project, agent } = req.params;
        const thread = await store.threads.create({
          projectId: project,
          agentId: agent,
          channel: req.body.channel,
          title: req.body.title,
        });
        if (!thread) throw notFound('agent', agent);
        return reply.status(201).send(threadOut(thread));
      },
    );

    app.get(
      '/projects/:project/agents/:agent/threads',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['threads'],
          summary: "The agent's threads, newest first",
          params: AgentParams,
          querystring: z.strictObject({
            limit: Limit,
            after: Uuid.optional().describe('next_after of the previous page'),
          }),
          response: {
            200: z
              .object({
                threads: z.array(ThreadOut),
                next_after: z.string().nullable().describe('null on the last page'),
              })
              .meta({ id: 'ThreadList' }),
            ...errors,
          },
        },
      },
      async (req) => {
        const { project, agent } = req.params;
        if (!(await store.agents.get(project, agent))) throw notFound('agent', agent);
        const rows = await store.threads.list(project, agent, req.query.limit + 1, req.query.after);
        const page = rows.slice(0, req.query.limit);
        return {
          threads: page.map(threadOut),
          next_after: rows.length > page.length ? page.at(-1)!.thread_id : null,
        };
      },
    );

    app.get(
      '/projects/:project/agents/:agent/threads/:thread_id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['threads'],
          summary: 'A thread with its turns: each message, its status, and the cards of its turn',
          params: ThreadParams,
          querystring: z.strictObject({
            limit: Limit.describe('the newest this many turns'),
            before: z.coerce
              .number()
              .int()
              .min(1)
              .optional()
              .describe('only turns before this seq'),
          }),
          response: { 200: ThreadDetail, ...errors },
        },
      },
      async (req) => {
        const { project, agent, thread_id } = req.params;
        const thread = await store.threads.get(project, agent, thread_id);
        if (!thread) throw notFound('thread', thread_id);
        const turns = await store.threads.turns(project, thread_id, {
          beforeSeq: req.query.before,
          limit: req.query.limit,
        });
        const oldest = turns[0]?.seq;
        return {
          ...threadOut(thread),
          turns: turns.map(turnOut),
          next_before: oldest !== undefined && oldest > 1 ? oldest : null,
        };
      },
    );

    app.post(
      '/projects/:project/agents/:agent/threads/:thread_id/messages',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['threads'],
          summary:
            "Send a message: the thread's next turn, started once the turns before it have ended",
          params: ThreadParams,
          body: z.strictObject({ input: TaskInput }),
          response: {
            202: z
              .object({
                thread_id: z.string(),
                seq: z.number().int(),
                task_id: z.string(),
                status: z.enum(TaskState),
                woken: z
                  .boolean()
                  .describe('false: the wakeup could not be published; the message waits'),
              })
              .meta({ id: 'ThreadMessageSent' }),
            409: ErrorResponse,
            ...errors,
          },
        },
      },
      async (req, reply) => {
        const { project, agent, thread_id } = req.params;
        const max = config.agent.thread_queue_max;
        const sent = await store.tx(async (tx) => {
          const next = await tx.threads.nextMessage(project, agent, thread_id, max);
          if (next.kind !== 'numbered') return next;
          // The message's task and its inbox row in one statement.
          const task = await tx.tasks.createInInbox(
            {
              projectId: project,
              agentId: agent,
              channel: next.channel,
              input: req.body.input,
              thread: { threadId: thread_id, seq: next.seq },
              traceparent: traceHeaders()[Header.traceparent],
              keyId: keyIdOf(req),
            },
            { channel: next.channel, thread_id },
          );
          if (!task) return { kind: 'not_found' as const };
          return { kind: 'filed' as const, task, seq: next.seq, channel: next.channel };
        });
        if (sent.kind === 'not_found') throw notFound('thread', thread_id);
        if (sent.kind === 'full')
          throw new ApiError(
            'conflict',
            `thread ${thread_id} has ${sent.waiting} messages waiting for its turn, the most it may queue ([agent] thread_queue_max = ${max}); send this one once a turn has ended`,
            { waiting: sent.waiting, limit: max },
          );
        const woken = await wakeAgent(
          publisher,
          subjects,
          { project, channel: sent.channel, agent, taskId: sent.task.task_id },
          req.log,
        );
        return reply.status(202).send({
          thread_id,
          seq: sent.seq,
          task_id: sent.task.task_id,
          status: sent.task.status,
          woken,
        });
      },
    );
  };
