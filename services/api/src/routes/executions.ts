// Running tools over HTTP: publish a tool call onto the mesh and wait (bounded) for its result,
// read an execution's status and card, and cancel it. The execution row is written `queued`
// before the call is published, so status and cancel find a call the moment its id is handed
// out, even before any tool service has seen it. History, metrics and the active list live in
// executions-history.ts and are registered from here.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { ResultWaitTimeoutError, type ToolCallRequest } from '@toolmesh/client';
import {
  CALL_CONTEXT_MAX_BYTES,
  CallContext,
  MeshError,
  splitToolName,
  type ToolResultContent,
} from '@toolmesh/protocol';
import type { Execution, ExecutionStatus } from '@toolmesh/store';
import { callerKeyOf, keyIdOf } from '../auth.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams, ToolName } from '../schemas.ts';
import { createArgumentsChecker } from './executions-args.ts';
import { executionHistoryRoutes } from './executions-history.ts';
import { ExecutionDetail, ExecutionParams, executionOut } from './executions-schemas.ts';

/** Written as the instance of a queued row; the tool service overwrites it when it starts. */
const QUEUED_BY = 'api';

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  429: ErrorResponse,
  503: ErrorResponse,
};

function isActive(status: ExecutionStatus): boolean {
  switch (status) {
    case 'queued':
    case 'awaiting_approval':
    case 'running':
      return true;
    case 'succeeded':
    case 'failed':
    case 'timeout':
    case 'canceled':
      return false;
    default:
      return status satisfies never;
  }
}

export const executionRoutes =
  (deps: RouteDeps): FastifyPluginAsyncZod =>
  async (app) => {
    const { store, client, nc, auth, config } = deps;
    const { execution_wait_min_ms: minWait, execution_wait_max_ms: maxWait } = config.api;
    const checker = createArgumentsChecker();

    /** The execution with its result card, once there is one. */
    async function detail(project: string, e: Execution) {
      const card = e.card_id ? await store.cards.byId(project, e.card_id) : undefined;
      return {
        execution: executionOut(e),
        card: card
          ? {
              card_id: card.card_id,
              created_at: card.created_at.toISOString(),
              content: card.content as ToolResultContent,
            }
          : null,
      };
    }

    /** The execution, if the request may see it: a caller key sees only what it started. */
    async function current(req: FastifyRequest, project: string, id: string): Promise<Execution> {
      const e = await store.executions.get(project, id);
      const caller = callerKeyOf(req);
      if (!e || (caller !== undefined && !(await store.executions.startedBy(e, caller))))
        throw notFound('execution', id);
      return e;
    }

    /** NATS trouble while publishing: the queued row goes (nothing will run it) and it is a 503. */
    async function publishFailed(project: string, id: string, err: unknown): Promise<never> {
      await store.executions.dropQueued(project, id);
      if (err instanceof ApiError) throw err;
      if (err instanceof MeshError && err.code !== 'unavailable') throw err;
      app.log.warn({ err, tool_call_id: id }, 'publishing a tool call failed');
      throw new ApiError('unavailable', 'the message bus is unavailable; retry later');
    }

    app.post(
      '/projects/:project/executions',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: 'Run a tool: publish the call, then wait for its result (or return at once)',
          description:
            '200 with the execution and its result card when the result arrived in time (whatever its status); 202 with the execution when not waiting or when the wait ran out: poll GET /executions/{id}.',
          params: ProjectParams,
          body: z.strictObject({
            tool: ToolName.describe('<target>.<tool>, as registered in the project'),
            arguments: z.record(z.string(), z.unknown()).default({}),
            channel: Id.default('api'),
            timeout_ms: z
              .number()
              .int()
              .positive()
              .max(config.tools.max_timeout_ms)
              .optional()
              .describe("the call's deadline, enforced by the tool service"),
            wait: z.boolean().default(true).describe('false: publish and answer 202 at once'),
            wait_ms: z
              .number()
              .int()
              .min(minWait)
              .max(maxWait)
              .optional()
              .describe(`how long this request waits for the result (${minWait}-${maxWait} ms)`),
            context: CallContext.optional().describe(
              `where the call comes from: session_id (1-128 characters; history filters by it) and a metadata object; at most ${CALL_CONTEXT_MAX_BYTES} bytes as JSON`,
            ),
          }),
          response: { 200: ExecutionDetail, 202: ExecutionDetail, ...errors },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        const body = req.body;
        const tool = await store.tools.get(project, body.tool);
        if (!tool) throw notFound('tool', body.tool);
        if (!tool.enabled) {
          throw new ApiError(
            { code: 'tool_disabled', status: 400 },
            `tool ${tool.name} is disabled`,
          );
        }
        const issues = checker.check(tool, body.arguments);
        if (issues) {
          const first = issues[0];
          throw new ApiError(
            { code: 'invalid_arguments', status: 400 },
            `invalid arguments for ${tool.name}: ${first ? `${first.path}: ${first.message}` : 'schema mismatch'}`,
            { issues },
          );
        }
        // Checked before the row is written: a closed connection would leave a queued row behind.
        if (nc.isClosed() || nc.isDraining()) {
          throw new ApiError('unavailable', 'the message bus connection is closed');
        }

        // The call's own deadline, else the one registered with the tool (never above the limit).
        const registered = (tool.options as { timeout_ms?: unknown }).timeout_ms;
        const deadline =
          body.timeout_ms ??
          (typeof registered === 'number'
            ? Math.min(registered, config.tools.max_timeout_ms)
            : undefined);
        const id = randomUUID();
        const queued = await store.executions.enqueue({
          projectId: project,
          toolCallId: id,
          channel: body.channel,
          toolName: tool.name,
          // As the tool service derives it from the subject, so the final upsert agrees.
          target: splitToolName(tool.name).target,
          instanceId: QUEUED_BY,
          context: body.context,
          keyId: keyIdOf(req),
        });
        if (!queued) throw new Error(`fresh tool call id ${id} already recorded`);
        const call: ToolCallRequest = {
          project,
          channel: body.channel,
          tool: tool.name,
          arguments: body.arguments,
          toolCallId: id,
          ...(deadline !== undefined ? { timeoutMs: deadline } : {}),
          ...(body.context !== undefined ? { context: body.context } : {}),
        };

        if (!body.wait) {
          await client
            .publishToolCall(call)
            .catch((err: unknown) => publishFailed(project, id, err));
          return reply
            .status(202)
            .send(await detail(project, (await store.executions.get(project, id)) ?? queued));
        }

        // A client that hangs up ends the wait: a five-minute wait should not outlive its request.
        const gone = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) gone.abort(new Error('client closed the connection'));
        };
        reply.raw.once('close', onClose);
        try {
          const waitMs = body.wait_ms ?? config.api.execution_wait_default_ms;
          const result = await client
            .callTool(call, { waitMs, signal: gone.signal })
            .catch((err: unknown) => {
              if (err instanceof ResultWaitTimeoutError || gone.signal.aborted) return undefined;
              return publishFailed(project, id, err);
            });
          const e = await store.executions.get(project, id);
          if (!result || !e) return reply.status(202).send(await detail(project, e ?? queued));
          // The card is written before its event is published, so the row is already final; the
          // card comes from the event and costs no read.
          return {
            execution: executionOut(e),
            card: {
              card_id: result.card_id,
              created_at: result.created_at,
              content: result.content,
            },
          };
        } finally {
          reply.raw.off('close', onClose);
        }
      },
    );

    app.get(
      '/projects/:project/executions/:id',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: "An execution's status, with its result card once finished",
          params: ExecutionParams,
          response: { 200: ExecutionDetail, ...errors },
        },
      },
      async (req) =>
        detail(req.params.project, await current(req, req.params.project, req.params.id)),
    );

    app.post(
      '/projects/:project/executions/:id/cancel',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: 'Ask the tool service to abort a queued or running execution',
          description:
            'Answers 202 once the cancel is published; the execution ends `canceled` with a card of its own (poll its status). A finished execution is a 409 with its status.',
          params: ExecutionParams,
          // Nullish: a POST without a body reaches the validator as null.
          body: z.strictObject({ reason: z.string().min(1).max(500).optional() }).nullish(),
          response: { 202: ExecutionDetail, 409: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project, id } = req.params;
        const e = await current(req, project, id);
        if (!isActive(e.status)) {
          throw new ApiError('conflict', `execution ${id} already finished: ${e.status}`, {
            status: e.status,
          });
        }
        try {
          await client.cancel({
            project,
            channel: e.channel,
            toolCallId: id,
            ...(req.body?.reason ? { reason: req.body.reason } : {}),
          });
        } catch (err) {
          app.log.warn({ err, tool_call_id: id }, 'publishing a cancel failed');
          throw new ApiError('unavailable', 'the message bus is unavailable; retry later');
        }
        return reply.status(202).send(await detail(project, e));
      },
    );

    await app.register(executionHistoryRoutes(deps));
  };
