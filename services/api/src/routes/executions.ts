// Running tools over HTTP: publish a tool call onto the mesh and wait (bounded) for its result,
// read an execution's status and card, and cancel it. The execution row is written `queued`
// before the call is published, so status and cancel find a call the moment its id is handed
// out, even before any tool service has seen it. A request is safe to send again under its
// tool_call_id or Idempotency-Key (executions-start.ts, executions-idempotency.ts); a finished or
// running execution can be run again from the arguments it kept (rerun). History,
// metrics and the active list live in executions-history.ts and are registered from here.
import { randomUUID } from 'node:crypto';
import type { FastifyRequest } from 'fastify';
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import { CALL_CONTEXT_MAX_BYTES, CallContext, type ToolResultContent } from '@toolmesh/protocol';
import type { CallsStore, Execution, RegistryStore } from '@toolmesh/store';
import { callerKeyOf, keyIdOf } from '../auth.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, ProjectParams, ToolName } from '../schemas.ts';
import { createArgumentsChecker } from './executions-args.ts';
import { executionHistoryRoutes } from './executions-history.ts';
import {
  IDEMPOTENCY_KEY_MAX,
  callFingerprint,
  idempotencyKeyOf,
  keyFingerprint,
} from './executions-idempotency.ts';
import {
  ExecutionDetail,
  ExecutionParams,
  ToolCallId,
  executionOut,
} from './executions-schemas.ts';
import { createCallStarter, isActive } from './executions-start.ts';

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  429: ErrorResponse,
  503: ErrorResponse,
};

/** Added to a keyed request's longest duration to make its key's lock. */
const KEY_LOCK_MARGIN_MS = 10_000;

export const executionRoutes =
  (deps: RouteDeps<CallsStore & RegistryStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const { store, client, nc, auth, config } = deps;
    const { execution_wait_min_ms: minWait, execution_wait_max_ms: maxWait } = config.api;
    const keyMaxAgeHours = config.retention.idempotency_keys_max_age_hours;
    const starter = createCallStarter({
      store,
      client,
      nc,
      config,
      checker: createArgumentsChecker({ maxDepth: config.tools.max_arguments_depth }),
      log: app.log,
    });

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

    app.post(
      '/projects/:project/executions',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: 'Run a tool: publish the call, then wait for its result (or return at once)',
          description: `200 with the execution and its result card when the result arrived in time (whatever its status); 202 with the execution when not waiting or when the wait ran out: poll GET /executions/{id}. Safe to send again: name the call's \`tool_call_id\`, or send an \`Idempotency-Key\` header (1-${IDEMPOTENCY_KEY_MAX} characters, kept ${keyMaxAgeHours} h): the same request again is answered from the same execution and card, never run twice; other arguments under the same id or key are 422, a key whose first request is still in progress 409. 504 \`outcome_unknown\`: the call was sent but not acknowledged and may run; send it again under \`error.details.tool_call_id\`, never under a new id.`,
          params: ProjectParams,
          body: z.strictObject({
            tool: ToolName.describe('<target>.<tool>, as registered in the project'),
            arguments: z.record(z.string(), z.unknown()).default({}),
            channel: Id.default('api'),
            tool_call_id: ToolCallId.optional().describe(
              'the id of this call (default: a new one); sending the same request again under it is answered from the same call',
            ),
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
          response: {
            200: ExecutionDetail,
            202: ExecutionDetail,
            ...errors,
            409: ErrorResponse,
            422: ErrorResponse,
            504: ErrorResponse,
          },
        },
      },
      async (req, reply) => {
        const { project } = req.params;
        const body = req.body;
        const idemKey = idempotencyKeyOf(req.headers['idempotency-key']);
        const keyId = keyIdOf(req);
        const fingerprint = callFingerprint(body, keyId);
        const waitMs = body.wait_ms ?? config.api.execution_wait_default_ms;
        // A client that hangs up ends the wait: a five-minute wait should not outlive its request.
        const gone = new AbortController();
        const onClose = () => {
          if (!reply.raw.writableFinished) gone.abort(new Error('client closed the connection'));
        };
        const run = async (id: string, newId: boolean) => {
          reply.raw.once('close', onClose);
          try {
            const started = await starter.start(
              project,
              id,
              fingerprint,
              { ...body, waitMs },
              { keyId, signal: gone.signal, newId },
            );
            const out =
              started.card === 'stored'
                ? await detail(project, started.execution)
                : { execution: executionOut(started.execution), card: started.card };
            return { status: started.status, out };
          } finally {
            reply.raw.off('close', onClose);
          }
        };

        if (idemKey === undefined) {
          const { status, out } = await run(
            body.tool_call_id ?? randomUUID(),
            body.tool_call_id === undefined,
          );
          return reply.status(status).send(out);
        }
        const claim = await store.idempotencyKeys.claim({
          projectId: project,
          key: idemKey,
          fingerprint: keyFingerprint(fingerprint, body.tool_call_id),
          toolCallId: body.tool_call_id ?? randomUUID(),
          // The whole request at most: its wait, the publish's acknowledgement, and a margin.
          lockMs: (body.wait ? waitMs : 0) + config.api.publish_ack_timeout_ms + KEY_LOCK_MARGIN_MS,
          maxAgeHours: keyMaxAgeHours,
        });
        switch (claim.kind) {
          case 'claimed':
            break;
          case 'mismatch':
            throw new ApiError(
              'idempotency_key_reused',
              'this Idempotency-Key was first sent with another request (other arguments, tool, channel, deadline, context, tool_call_id or API key); use a new key for a new call',
            );
          case 'in_progress':
            throw new ApiError(
              'idempotency_key_in_use',
              'a request with this Idempotency-Key is still in progress; send it again once it has been answered',
            );
          default:
            return claim satisfies never;
        }
        let answer: Awaited<ReturnType<typeof run>>;
        try {
          answer = await run(claim.toolCallId, claim.fresh && body.tool_call_id === undefined);
        } catch (err) {
          // A key whose call was never recorded may start one afresh; otherwise it names it.
          if ((await store.executions.get(project, claim.toolCallId)) === undefined)
            await store.idempotencyKeys.forget(project, idemKey, claim.toolCallId);
          else await store.idempotencyKeys.release(project, idemKey, claim.toolCallId);
          throw err;
        }
        // Released before the answer leaves: a client sending the key again at once is served.
        await store.idempotencyKeys.release(project, idemKey, claim.toolCallId);
        return reply.status(answer.status).send(answer.out);
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

    app.post(
      '/projects/:project/executions/:id/rerun',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: 'Run an execution again: the same tool, arguments, channel and context',
          description:
            "Starts a new call (a new id, started by this key) from what the execution kept, and answers 202 with the new execution at once. Its deadline is `timeout_ms` of the body, else the one the execution asked for (its `timeout_ms`), else the tool's default. An execution whose arguments were not kept in full (over tools.execution_arguments_max_bytes, or not recorded) is a 409.",
          params: ExecutionParams,
          body: z
            .strictObject({
              timeout_ms: z
                .number()
                .int()
                .positive()
                .max(config.tools.max_timeout_ms)
                .optional()
                .describe("the new call's deadline (default: the execution's own)"),
            })
            .nullish(),
          response: { 202: ExecutionDetail, 409: ErrorResponse, 422: ErrorResponse, ...errors },
        },
      },
      async (req, reply) => {
        const { project, id } = req.params;
        const e = await current(req, project, id);
        const args = e.arguments;
        if (args === null || '$truncated' in args || '$unstorable' in args) {
          throw new ApiError(
            'conflict',
            `execution ${id} did not keep its arguments in full; start the call with POST /executions instead`,
          );
        }
        const context =
          e.session_id === null && e.context_metadata === null
            ? undefined
            : {
                ...(e.session_id !== null ? { session_id: e.session_id } : {}),
                ...(e.context_metadata !== null ? { metadata: e.context_metadata } : {}),
              };
        // Its own deadline, within today's limit (the limit may have been lowered since).
        const kept =
          e.timeout_ms === null ? undefined : Math.min(e.timeout_ms, config.tools.max_timeout_ms);
        const timeout = req.body?.timeout_ms ?? kept;
        const body = {
          tool: e.tool_name,
          arguments: args,
          channel: e.channel,
          context,
          ...(timeout !== undefined ? { timeout_ms: timeout } : {}),
        };
        const keyId = keyIdOf(req);
        const started = await starter.start(
          project,
          randomUUID(),
          callFingerprint(body, keyId),
          { ...body, wait: false, waitMs: 0 },
          { keyId, signal: new AbortController().signal, newId: true },
        );
        return reply.status(202).send({ execution: executionOut(started.execution), card: null });
      },
    );

    await app.register(executionHistoryRoutes(deps));
  };
