// Request and response schemas of the execution routes, and the mapping from store rows to
// what leaves the api (ISO dates, `id` for the tool call id).
import { z } from 'zod';
import { TOOL_CALL_ID_PATTERN } from '@toolmesh/protocol';
import { ExecutionStatus, type Execution } from '@toolmesh/store';
import { ProjectParams, iso } from '../schemas.ts';

export const ToolCallId = z
  .string()
  .regex(TOOL_CALL_ID_PATTERN, 'must be 1-128 characters of [A-Za-z0-9_-]');
export const ExecutionParams = ProjectParams.extend({ id: ToolCallId });
export const ExecutionStatusSchema = z.enum(ExecutionStatus);

export const ExecutionOut = z
  .object({
    id: z.string().describe('the tool call id'),
    tool: z.string().describe('<target>.<tool>'),
    target: z.string(),
    channel: z.string(),
    status: ExecutionStatusSchema,
    error_code: z.string().nullable(),
    agent_id: z.string().nullable(),
    task_id: z.string().nullable().describe('the agent task the call was made for'),
    turn_id: z.string().nullable().describe('the agent turn the call was made in'),
    arguments: z
      .record(z.string(), z.unknown())
      .nullable()
      .describe(
        'the arguments as the caller sent them; past tools.execution_arguments_max_bytes, {"$truncated": {size_bytes, limit_bytes}}',
      ),
    attempts: z.number().int(),
    card_id: z.string().nullable().describe('the result card, once finished'),
    created_at: z.string().describe('when the execution was first recorded (queued)'),
    started_at: z.string().describe('when its handler started (or when it was queued)'),
    finished_at: z.string().nullable(),
    duration_ms: z.number().nullable().describe("the handler's run time"),
    cost: z
      .object({ amount: z.number(), currency: z.string() })
      .nullable()
      .describe("the cost estimate of the tool's options `cost`, when it has one"),
    context: z
      .object({
        session_id: z.string().nullable(),
        metadata: z.record(z.string(), z.unknown()).nullable(),
      })
      .nullable()
      .describe("the caller's context, when the call carried one"),
    key_id: z
      .string()
      .nullable()
      .describe('the API key that started the call over HTTP (never the key itself)'),
    credential_id: z
      .string()
      .nullable()
      .describe(
        'the bus credential the publisher named (CG-Credential-Id), when one of the project',
      ),
    timeout_ms: z
      .number()
      .int()
      .nullable()
      .describe(
        'the deadline the call asked for (null: none, the tool default applied, or not recorded)',
      ),
  })
  .meta({ id: 'Execution' });

export const ResultContent = z
  .object({
    status: z.string(),
    result: z.unknown().optional(),
    error: z
      .object({
        code: z.string(),
        message: z.string(),
        details: z.record(z.string(), z.unknown()).optional(),
      })
      .optional(),
    duration_ms: z.number(),
  })
  .meta({ id: 'ToolResultContent' });

export const ResultCardOut = z
  .object({ card_id: z.string(), created_at: z.string(), content: ResultContent })
  .meta({ id: 'ResultCard' });

export const ExecutionDetail = z
  .object({ execution: ExecutionOut, card: ResultCardOut.nullable() })
  .meta({ id: 'ExecutionDetail' });

export const HistoryItem = ExecutionOut.extend({ category: z.string().nullable() }).meta({
  id: 'ExecutionHistoryItem',
});

const ByStatus = z.object({
  queued: z.number().int(),
  running: z.number().int(),
  succeeded: z.number().int(),
  failed: z.number().int(),
  timeout: z.number().int(),
  canceled: z.number().int(),
});

export const ExecutionPage = z
  .object({
    executions: z.array(HistoryItem),
    next_cursor: z
      .string()
      .nullable()
      .describe('pass as `cursor` for the next page; null at the end'),
    total: z.number().int().describe('executions matching the filter, on all pages'),
    avg_duration_ms: z.number().nullable().describe('over the finished ones matching the filter'),
    by_status: ByStatus,
  })
  .meta({ id: 'ExecutionPage' });

const Rate = z.number().min(0).max(1).nullable();

export const ExecutionMetricsOut = z
  .object({
    from: z.string().nullable(),
    to: z.string().nullable(),
    total: z.number().int().describe('every execution started in the range, finished or not'),
    finished: z.number().int(),
    by_status: ByStatus,
    success_rate: Rate.describe('succeeded / finished; null with nothing finished'),
    failure_rate: Rate.describe('(failed + timeout + canceled) / finished'),
    failure_rates: z.object({ failed: Rate, timeout: Rate, canceled: Rate }),
    avg_duration_ms: z.number().nullable(),
    p95_duration_ms: z.number().nullable(),
    most_used: z.array(
      z.object({
        tool: z.string(),
        count: z.number().int(),
        success_rate: Rate.describe('over its finished calls'),
        avg_duration_ms: z.number().nullable(),
      }),
    ),
    cost: z
      .object({
        totals: z
          .array(z.object({ currency: z.string(), total: z.number(), calls: z.number().int() }))
          .describe('the project, per currency'),
        by_tool: z.array(
          z.object({
            tool: z.string(),
            currency: z.string(),
            total: z.number(),
            calls: z.number().int(),
          }),
        ),
      })
      .describe('summed cost estimates of executions whose tool has options `cost`'),
  })
  .meta({ id: 'ExecutionMetrics' });

export const ActiveExecution = ExecutionOut.extend({
  elapsed_ms: z.number().describe('since it started (or was queued)'),
}).meta({ id: 'ActiveExecution' });

export function executionOut(e: Execution) {
  return {
    id: e.tool_call_id,
    tool: e.tool_name,
    target: e.target,
    channel: e.channel,
    status: e.status,
    error_code: e.error_code,
    agent_id: e.agent_id,
    task_id: e.task_id,
    turn_id: e.turn_id,
    arguments: e.arguments,
    attempts: e.attempts,
    card_id: e.card_id,
    created_at: e.created_at.toISOString(),
    started_at: e.started_at.toISOString(),
    finished_at: iso(e.finished_at),
    duration_ms: e.duration_ms,
    cost:
      e.cost === null || e.cost_currency === null
        ? null
        : { amount: e.cost, currency: e.cost_currency },
    context:
      e.session_id === null && e.context_metadata === null
        ? null
        : { session_id: e.session_id, metadata: e.context_metadata },
    key_id: e.key_id,
    credential_id: e.credential_id,
    timeout_ms: e.timeout_ms,
  };
}
