// What happened to a project's executions: the history (filtered, keyset-paginated, with totals
// and average duration), metrics over a time range, and the executions queued or running now.
import type { FastifyPluginAsyncZod } from 'fastify-type-provider-zod';
import { z } from 'zod';
import type { CallsStore, HistoryKey, HistorySummary } from '@toolmesh/store';
import { callerKeyOf } from '../auth.ts';
import type { RouteDeps } from '../deps.ts';
import { ApiError, ErrorResponse } from '../errors.ts';
import { Id, Limit, ProjectParams, Timestamp, ToolName, Uuid } from '../schemas.ts';
import {
  ActiveExecution,
  ExecutionMetricsOut,
  ExecutionPage,
  ExecutionStatusSchema,
  executionOut,
} from './executions-schemas.ts';

const errors = {
  400: ErrorResponse,
  401: ErrorResponse,
  403: ErrorResponse,
  404: ErrorResponse,
  429: ErrorResponse,
};

// The cursor is the last row's sort key, opaque to clients: base64url of [started_at, id].
const PG_TIMESTAMP = /^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(\.\d{1,6})?[+-]\d\d(:\d\d){0,2}$/;
const encodeCursor = (k: HistoryKey) =>
  Buffer.from(JSON.stringify([k.startedAt, k.toolCallId])).toString('base64url');

function decodeCursor(cursor: string): HistoryKey {
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8'));
  } catch {
    parsed = undefined;
  }
  if (
    Array.isArray(parsed) &&
    parsed.length === 2 &&
    typeof parsed[0] === 'string' &&
    PG_TIMESTAMP.test(parsed[0]) &&
    typeof parsed[1] === 'string'
  ) {
    return { startedAt: parsed[0], toolCallId: parsed[1] };
  }
  throw new ApiError(
    'invalid_request',
    'cursor is not one this api issued; pass next_cursor back unchanged',
  );
}

const date = (s: string | undefined) => (s === undefined ? undefined : new Date(s));
const rate = (n: number, of: number) => (of > 0 ? n / of : null);
const finishedOf = (s: HistorySummary) =>
  s.by_status.succeeded + s.by_status.failed + s.by_status.timeout + s.by_status.canceled;

const Range = {
  from: Timestamp.optional().describe('inclusive lower bound on started_at (ISO 8601)'),
  to: Timestamp.optional().describe('exclusive upper bound on started_at (ISO 8601)'),
};
const rangeInOrder = (q: { from?: string | undefined; to?: string | undefined }) =>
  !q.from || !q.to || Date.parse(q.from) <= Date.parse(q.to);
const rangeMessage = { message: 'from must not be after to', path: ['from'] };

export const executionHistoryRoutes =
  ({ store, auth }: RouteDeps<CallsStore>): FastifyPluginAsyncZod =>
  async (app) => {
    app.get(
      '/projects/:project/executions',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary:
            'Execution history, newest first, with totals and average duration over the filter',
          description:
            'A key of role caller sees only the executions it started (over HTTP, or as calls of tasks it started).',
          params: ProjectParams,
          querystring: z
            .strictObject({
              tool: ToolName.optional(),
              category: z
                .string()
                .min(1)
                .max(64)
                .optional()
                .describe("the tool's registry category"),
              status: ExecutionStatusSchema.optional(),
              channel: Id.optional(),
              agent: Id.optional().describe('calls made by this agent'),
              task: Uuid.optional().describe('calls made for this agent task'),
              turn: Uuid.optional().describe('calls made in this agent turn'),
              session_id: z
                .string()
                .min(1)
                .max(128)
                .optional()
                .describe('calls whose context carried this session_id'),
              key_id: Uuid.optional().describe(
                'calls started by this API key: over HTTP, or as calls of tasks it started',
              ),
              ...Range,
              limit: Limit,
              cursor: z
                .string()
                .min(1)
                .max(2_000)
                .optional()
                .describe('next_cursor of the previous page'),
            })
            .refine(rangeInOrder, rangeMessage),
          response: { 200: ExecutionPage, ...errors },
        },
      },
      async (req) => {
        const { project } = req.params;
        const q = req.query;
        const caller = callerKeyOf(req);
        if (caller !== undefined && q.key_id !== undefined && q.key_id !== caller) {
          throw new ApiError('forbidden', 'a key of role caller sees only its own executions', {
            role: 'caller',
          });
        }
        const filter = {
          tool: q.tool,
          category: q.category,
          status: q.status,
          channel: q.channel,
          agent: q.agent,
          task: q.task,
          turn: q.turn,
          session: q.session_id,
          key: caller ?? q.key_id,
          from: date(q.from),
          to: date(q.to),
        };
        const after = q.cursor === undefined ? undefined : decodeCursor(q.cursor);
        // One row more than asked tells whether another page follows, without a count.
        const [rows, summary] = await Promise.all([
          store.executions.history(project, filter, q.limit + 1, after),
          store.executions.summary(project, filter),
        ]);
        const page = rows.slice(0, q.limit);
        const last = page.at(-1);
        return {
          executions: page.map((r) => ({ ...executionOut(r), category: r.category })),
          next_cursor:
            rows.length > q.limit && last
              ? encodeCursor({ startedAt: last.sort_started_at, toolCallId: last.tool_call_id })
              : null,
          total: summary.total,
          avg_duration_ms: summary.avg_duration_ms,
          by_status: summary.by_status,
        };
      },
    );

    app.get(
      '/projects/:project/executions/metrics',
      {
        onRequest: auth.requireProject,
        schema: {
          tags: ['executions'],
          summary: 'Success and failure rates, durations and the most used tools over a time range',
          description: 'Rates are over finished executions; without from/to, over all of them.',
          params: ProjectParams,
          querystring: z
            .strictObject({ ...Range, top: z.coerce.number().int().min(1).max(100).default(10) })
            .refine(rangeInOrder, rangeMessage),
          response: { 200: ExecutionMetricsOut, ...errors },
        },
      },
      async (req) => {
        const { from, to, top } = req.query;
        const m = await store.executions.metrics(
          req.params.project,
          { from: date(from), to: date(to) },
          top,
        );
        const finished = finishedOf(m);
        const failures = m.by_status.failed + m.by_status.timeout + m.by_status.canceled;
        return {
          from: from ?? null,
          to: to ?? null,
          total: m.total,
          finished,
          by_status: m.by_status,
          success_rate: rate(m.by_status.succeeded, finished),
          failure_rate: rate(failures, finished),
          failure_rates: {
            failed: rate(m.by_status.failed, finished),
            timeout: rate(m.by_status.timeout, finished),
            canceled: rate(m.by_status.canceled, finished),
          },
          avg_duration_ms: m.avg_duration_ms,
          p95_duration_ms: m.p95_duration_ms,
          most_used: m.most_used.map((t) => ({
            tool: t.tool_name,
            count: t.count,
            success_rate: rate(t.succeeded, t.finished),
            avg_duration_ms: t.avg_duration_ms,
          })),
          cost: {
            totals: m.cost
              .filter((c) => c.tool_name === null)
              .map(({ currency, total, calls }) => ({ currency, total, calls })),
            by_tool: m.cost.flatMap(({ tool_name, currency, total, calls }) =>
              tool_name === null ? [] : [{ tool: tool_name, currency, total, calls }],
            ),
          },
        };
      },
    );

    app.get(
      '/projects/:project/executions/active',
      {
        onRequest: auth.requireCaller,
        schema: {
          tags: ['executions'],
          summary: 'Executions queued or running now, oldest first',
          description: 'A key of role caller sees only the executions it started.',
          params: ProjectParams,
          querystring: z.strictObject({ limit: Limit }),
          response: {
            200: z.object({ executions: z.array(ActiveExecution), count: z.number().int() }),
            ...errors,
          },
        },
      },
      async (req) => {
        const rows = await store.executions.active(
          req.params.project,
          req.query.limit,
          callerKeyOf(req),
        );
        const now = Date.now();
        return {
          executions: rows.map((e) => ({
            ...executionOut(e),
            elapsed_ms: now - e.started_at.getTime(),
          })),
          count: rows.length,
        };
      },
    );
  };
