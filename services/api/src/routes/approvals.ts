// Human approvals of a project's tool calls: the calls waiting for a person (with their
// arguments as the execution log keeps them), their decisions, and the targets that require
// approval as a whole. A decision names who took it (the key, or the admin key) and why; the
// first decision stands, a repeat of it answers the same, a contrary one is 409 `conflict`.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import type { FastifyRequest } from 'fastify';
import { z } from 'zod';
import { ApprovalMode, MAX_APPROVAL_TIMEOUT_MS, RegistryChange } from '@toolmesh/protocol';
import {
  type ApprovalRecord,
  ApprovalStatus,
  type CallsStore,
  type TargetApproval,
} from '@toolmesh/store';
import type { RouteDeps } from '../deps.ts';
import { createApprovalDecider } from '../approvals.ts';
import { ApiError, ErrorResponse, notFound } from '../errors.ts';
import { Id, Limit, ProjectParams, Timestamp, Uuid, iso } from '../schemas.ts';

export const ApprovalOut = z
  .object({
    approval_id: z.string(),
    tool_call_id: z.string(),
    tool_name: z.string(),
    target: z.string(),
    channel: z.string(),
    agent_id: z.string().nullable(),
    arguments: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        'the arguments as the caller sent them; past tools.execution_arguments_max_bytes, {"$truncated": {size_bytes, limit_bytes}}',
      ),
    required_by: z
      .object({ source: z.enum(['tool', 'agent', 'target']), mode: z.enum(ApprovalMode) })
      .describe("what required the approval: the tool's options, the agent's config, the target"),
    status: z.enum(ApprovalStatus),
    requested_at: z.string(),
    expires_at: z.string().describe('without a decision by then the call fails approval_timeout'),
    decided_at: z.string().nullable(),
    decided_by: z
      .string()
      .nullable()
      .describe('key:<key id>, admin, mcp:<key id> (an MCP client), or system (the deadline)'),
    reason: z.string().nullable(),
  })
  .meta({ id: 'Approval' });

export const approvalOut = (a: ApprovalRecord) => ({
  approval_id: a.approval_id,
  tool_call_id: a.tool_call_id,
  tool_name: a.tool_name,
  target: a.target,
  channel: a.channel,
  agent_id: a.agent_id,
  arguments: a.arguments,
  required_by: a.required_by,
  status: a.status,
  requested_at: a.requested_at.toISOString(),
  expires_at: a.expires_at.toISOString(),
  decided_at: iso(a.decided_at),
  decided_by: a.decided_by,
  reason: a.decision_reason,
});

const TargetApprovalOut = z
  .object({
    target: z.string(),
    approval: z.enum(ApprovalMode),
    approval_timeout_ms: z.number().int().nullable(),
    updated_at: z.string(),
  })
  .meta({ id: 'TargetApproval' });
const targetOut = (t: TargetApproval) => ({
  target: t.target,
  approval: t.approval,
  approval_timeout_ms: t.approval_timeout_ms,
  updated_at: t.updated_at.toISOString(),
});

const ApprovalParams = ProjectParams.extend({ id: Uuid });
const TargetParams = ProjectParams.extend({ target: Id });
const Reason = z.string().trim().min(1).max(1000);
const errors = { 400: ErrorResponse, 401: ErrorResponse, 403: ErrorResponse, 404: ErrorResponse };

/** Who a request decides as: the key it authenticated with, or the admin key. */
export function deciderOf(req: FastifyRequest): string {
  const p = req.principal;
  return p?.kind === 'project' ? `key:${p.keyId}` : 'admin';
}

export const approvalRoutes =
  ({ store, auth, nc, logger, registryEvents }: RouteDeps<CallsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    const decider = createApprovalDecider({ store, nc, logger });

    app.get(
      '/projects/:project/approvals',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'Tool calls waiting for (or given) a human decision, newest first',
          description:
            'Pending ones by default; `status` picks another state (`any`: every state). `from` and `to` bound when the call was held and `tool_call_id` names one call, so an approval past the newest `limit` is found. A pending call holds no worker: it runs, or fails approval_denied / approval_timeout, once decided.',
          params: ProjectParams,
          querystring: z
            .strictObject({
              status: z.enum([...Object.values(ApprovalStatus), 'any']).default('pending'),
              from: Timestamp.optional().describe('inclusive lower bound on requested_at'),
              to: Timestamp.optional().describe('exclusive upper bound on requested_at'),
              tool_call_id: z.string().min(1).max(128).optional(),
              limit: Limit,
            })
            .refine((q) => !q.from || !q.to || Date.parse(q.from) <= Date.parse(q.to), {
              message: 'from must not be after to',
              path: ['from'],
            }),
          response: { 200: z.object({ approvals: z.array(ApprovalOut) }), ...errors },
        },
      },
      async (req) => {
        const q = req.query;
        const status = q.status === 'any' ? undefined : q.status;
        const from = q.from === undefined ? undefined : new Date(q.from);
        const to = q.to === undefined ? undefined : new Date(q.to);
        let found: ApprovalRecord[];
        if (q.tool_call_id !== undefined) {
          const one = await store.approvals.forCall(req.params.project, q.tool_call_id);
          found =
            one &&
            (status === undefined || one.status === status) &&
            (from === undefined || one.requested_at >= from) &&
            (to === undefined || one.requested_at < to)
              ? [one]
              : [];
        } else {
          found = await store.approvals.list(req.params.project, {
            status,
            from,
            to,
            limit: q.limit,
          });
        }
        return { approvals: found.map(approvalOut) };
      },
    );

    app.get(
      '/projects/:project/approvals/:id',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'One approval',
          params: ApprovalParams,
          response: { 200: ApprovalOut, ...errors },
        },
      },
      async (req) => {
        const a = await store.approvals.get(req.params.project, req.params.id);
        if (!a) throw notFound('approval', req.params.id);
        return approvalOut(a);
      },
    );

    const decide = (decision: 'approved' | 'denied') =>
      async function handler(
        req: FastifyRequest<{
          Params: z.infer<typeof ApprovalParams>;
          Body: { reason?: string | undefined };
        }>,
      ) {
        const { project, id } = req.params;
        const out = await decider.decide(project, id, decision, deciderOf(req), req.body.reason);
        if (!out) throw notFound('approval', id);
        if (!out.decided && out.approval.status !== decision) {
          throw new ApiError(
            'conflict',
            `approval ${id} was already decided: ${out.approval.status} by ${out.approval.decided_by ?? 'unknown'}`,
            { approval: approvalOut(out.approval) },
          );
        }
        return approvalOut(out.approval);
      };

    app.post(
      '/projects/:project/approvals/:id/approve',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'Approve a waiting call: it runs once, under its own tool_call_id',
          description:
            'The first decision stands: approving an approved call answers it again; a denied or timed-out one is 409 conflict.',
          params: ApprovalParams,
          body: z.strictObject({ reason: Reason.optional() }).default({}),
          response: { 200: ApprovalOut, 409: ErrorResponse, ...errors },
        },
      },
      decide('approved'),
    );

    app.post(
      '/projects/:project/approvals/:id/deny',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'Deny a waiting call: it fails approval_denied, saying who and why',
          params: ApprovalParams,
          body: z.strictObject({ reason: Reason }),
          response: { 200: ApprovalOut, 409: ErrorResponse, ...errors },
        },
      },
      decide('denied'),
    );

    app.get(
      '/projects/:project/targets/approvals',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'The targets whose every call requires approval',
          params: ProjectParams,
          response: { 200: z.object({ targets: z.array(TargetApprovalOut) }), ...errors },
        },
      },
      async (req) => ({
        targets: (await store.approvals.listTargets(req.params.project)).map(targetOut),
      }),
    );

    app.put(
      '/projects/:project/targets/:target/approval',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: 'Require approval for the calls of a whole target (e.g. builtin, an MCP server)',
          params: TargetParams,
          body: z.strictObject({
            approval: z.enum(ApprovalMode),
            approval_timeout_ms: z.int().min(1).max(MAX_APPROVAL_TIMEOUT_MS).optional(),
          }),
          response: { 200: TargetApprovalOut, ...errors },
        },
      },
      async (req) => {
        const { project, target } = req.params;
        const t = await store.approvals.setTarget(
          project,
          target,
          req.body.approval,
          req.body.approval_timeout_ms,
        );
        await registryEvents.changed(project, RegistryChange.updated, []);
        return targetOut(t);
      },
    );

    app.delete(
      '/projects/:project/targets/:target/approval',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['approvals'],
          summary: "Stop requiring approval for a target's calls (calls already waiting still do)",
          params: TargetParams,
          response: { 204: z.null(), ...errors },
        },
      },
      async (req, reply) => {
        const { project, target } = req.params;
        if (!(await store.approvals.deleteTarget(project, target)))
          throw new ApiError('not_found', `target ${JSON.stringify(target)} requires no approval`);
        await registryEvents.changed(project, RegistryChange.updated, []);
        return reply.status(204).send(null);
      },
    );
  };
