// Input requests of a project's calls: what an MCP server asked during a call (elicitation) that
// no MCP client could answer (docs/mcp.md, "Sampling and elicitation"). The call waits, its
// server's request open, until someone answers here (accept with content matching the form,
// decline, cancel) or its deadline passes (the call fails input_expired). The first answer
// stands, on any instance; a repeat of it answers the same, another is 409 `conflict`
// (input-answers.ts, shared with a 2026-07-28 MCP client's answer and a task's tasks/update).
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import {
  type CallsStore,
  InputAction,
  type InputRequestRecord,
  InputRequestStatus,
} from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { ErrorResponse, notFound } from '../errors.ts';
import { createInputAnswers } from '../input-answers.ts';
import { Limit, ProjectParams, Uuid, iso } from '../schemas.ts';
import { deciderOf } from './approvals.ts';

export const InputRequestOut = z
  .object({
    input_request_id: z.string(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    channel: z.string(),
    server: z.string().describe('the MCP server that asks'),
    message: z.string().describe("the server's question, shown to whoever answers"),
    requested_schema: z
      .record(z.string(), z.unknown())
      .describe(
        'the form the server asks for: a flat JSON Schema object; accepted content must match it',
      ),
    status: z.enum(InputRequestStatus),
    action: z.enum(InputAction).nullable(),
    content: z.record(z.string(), z.unknown()).nullable(),
    requested_at: z.string(),
    expires_at: z
      .string()
      .describe(
        'without an answer by then the call fails input_expired (just before its deadline)',
      ),
    answered_at: z.string().nullable(),
    answered_by: z.string().nullable().describe('key:<key id> or admin'),
  })
  .meta({ id: 'InputRequest' });

export const inputRequestOut = (r: InputRequestRecord) => ({
  input_request_id: r.input_request_id,
  tool_call_id: r.tool_call_id,
  tool_name: r.tool_name,
  channel: r.channel,
  server: r.server,
  message: r.message,
  requested_schema: r.requested_schema,
  status: r.status,
  action: r.action,
  content: r.content,
  requested_at: r.requested_at.toISOString(),
  expires_at: r.expires_at.toISOString(),
  answered_at: iso(r.answered_at),
  answered_by: r.answered_by,
});

const InputParams = ProjectParams.extend({ id: Uuid });
const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse };
const Content = z.record(z.string(), z.unknown());

export const inputRequestRoutes =
  ({ store, auth, nc, client, logger }: RouteDeps<CallsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const answers = createInputAnswers({ store, nc, client, logger, show: inputRequestOut });

    app.get(
      '/projects/:project/input-requests',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['input-requests'],
          summary: "What the project's MCP servers asked during calls that no client could answer",
          description:
            'Pending ones by default, newest first; `status` picks another state. A pending request holds its call (and its MCP server) until answered or expired.',
          params: ProjectParams,
          querystring: z.strictObject({
            status: z.enum(InputRequestStatus).default('pending'),
            limit: Limit,
          }),
          response: { 200: z.object({ input_requests: z.array(InputRequestOut) }), ...errors },
        },
      },
      async (req) => ({
        input_requests: (
          await store.inputRequests.list(req.params.project, {
            status: req.query.status,
            limit: req.query.limit,
          })
        ).map(inputRequestOut),
      }),
    );

    app.get(
      '/projects/:project/input-requests/:id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['input-requests'],
          summary: 'One input request',
          params: InputParams,
          response: { 200: InputRequestOut, ...errors },
        },
      },
      async (req) => {
        const r = await store.inputRequests.get(req.params.project, req.params.id);
        if (!r) throw notFound('input request', req.params.id);
        return inputRequestOut(r);
      },
    );

    app.post(
      '/projects/:project/input-requests/:id/answer',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['input-requests'],
          summary:
            'Answer an input request: the answer goes to the MCP server and the call goes on',
          description:
            '`accept` with `content` matching the requested form (400 invalid_input otherwise); `decline` or `cancel` without content. The first answer stands: a repeat answers again, another is 409 conflict; past its deadline 409 input_expired.',
          params: InputParams,
          body: z.strictObject({
            action: z.enum(InputAction),
            content: Content.optional(),
          }),
          response: { 200: InputRequestOut, 409: ErrorResponse, ...errors },
        },
      },
      async (req) => {
        const { project, id } = req.params;
        return inputRequestOut(await answers.answer(project, id, req.body, deciderOf(req)));
      },
    );
  };
