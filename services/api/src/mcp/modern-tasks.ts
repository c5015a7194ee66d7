// MCP Tasks on the 2026-07-28 revision: the `io.modelcontextprotocol/tasks` extension. The same
// durable rows as the 2025-11 form (tasks.ts): the task id is the call's tool_call_id, the state
// the execution's, the result its card, so any api instance answers for any task. Differences
// of the revision: the server chooses the ttl (`[api] mcp_task_ttl_ms`), a task is created only
// when the request's `_meta` client capabilities declare the extension, and `tasks/get` carries
// the outcome itself (the result, or the error); there is no tasks/result or tasks/list. A call
// waiting for a human approval is `input_required`, its input request an elicitation whose key
// is the approval id; tasks/update with the answer under that key decides it (approval-input.ts).
// A call whose MCP server asks for input (an elicitation of the server's own task, or during the
// call) is `input_required` too, each pending input request under its id; tasks/update answers
// it as the input-requests route does. Keys a task does not wait for are ignored (SEP-2663:
// partial answers are honoured). A request that does not declare the extension gets -32021.
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  ProtocolErrorCode,
  type Server,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Client } from '@toolmesh/client';
import type { CallsStore, McpTaskRecord } from '@toolmesh/store';
import type { MeshCalls } from './calls.ts';
import { TASK_POLL_INTERVAL_MS, cancelTask } from './tasks.ts';
import type { ApprovalDecider } from '../approvals.ts';
import { applyAnswer, approvalElicitation } from './approval-input.ts';
import { upstreamProtocolError } from './modern-input.ts';
import type { InputAnswers } from '../input-answers.ts';
import { ApiError } from '../errors.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const CLIENT_CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * Does a request declare the tasks extension among its client capabilities? The SDK lifts the
 * `_meta` envelope off the params into the request context (`envelope`); a raw `_meta` is read
 * too.
 */
export function declaresTasks(envelope: unknown, params: unknown): boolean {
  const fromEnvelope = isRecord(envelope) ? envelope[CLIENT_CAPABILITIES_META] : undefined;
  const meta = isRecord(params) ? params['_meta'] : undefined;
  const caps = fromEnvelope ?? (isRecord(meta) ? meta[CLIENT_CAPABILITIES_META] : undefined);
  const extensions = isRecord(caps) ? caps['extensions'] : undefined;
  return isRecord(extensions) && isRecord(extensions[TASKS_EXTENSION]);
}

/** The task fields every form of the revision shares. */
function base(r: McpTaskRecord) {
  return {
    taskId: r.task_id,
    createdAt: r.created_at.toISOString(),
    lastUpdatedAt: r.updated_at.toISOString(),
    ttlMs: r.ttl_ms,
    pollIntervalMs: r.poll_interval_ms,
  };
}

/** A created task, as tools/call answers it. */
export function createdTask(r: McpTaskRecord) {
  return { resultType: 'task', status: 'working', ...base(r) };
}

const taskNotFound = (taskId: string) =>
  new ProtocolError(ProtocolErrorCode.InvalidParams, `Task not found: ${taskId}`, { taskId });

const TaskParams = z.looseObject({ taskId: z.string().min(1).max(255) });
const InputResponses = z.record(z.string(), z.unknown());
const Answer = z.looseObject({
  action: z.enum(['accept', 'decline', 'cancel']),
  content: z.record(z.string(), z.unknown()).optional(),
});

/** A recorded call with the tasks extension: the mesh serves a task for it. */
export async function recordServerTask(
  store: CallsStore,
  project: string,
  taskId: string,
  ttlMs: number,
) {
  const row = await store.mcpTasks.create({
    projectId: project,
    taskId,
    ttlMs,
    pollIntervalMs: TASK_POLL_INTERVAL_MS,
  });
  return createdTask(row);
}

const needsTasks = () =>
  new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });

/** Registers tasks/get, tasks/update and tasks/cancel of one project on a modern server. */
export function registerModernTasks(
  server: Server,
  deps: {
    store: CallsStore;
    client: Client;
    calls: MeshCalls;
    project: string;
    decider: ApprovalDecider;
    /** Who answers an approval for this request's client. */
    caller: string;
    answers: InputAnswers;
  },
): void {
  const { store, calls, project } = deps;

  /** The task with its outcome: working, completed with the card, cancelled, or failed. */
  async function detailed(taskId: string) {
    const r = await store.mcpTasks.get(project, taskId);
    if (!r) throw taskNotFound(taskId);
    const fields = base(r);
    switch (r.status) {
      case 'queued':
      case 'running': {
        // What the call's MCP server asks, as durable input requests (ask.ts in the tools).
        const asked = await store.inputRequests.pendingForCall(project, taskId);
        if (asked.length === 0) return { ...fields, status: 'working' };
        return {
          ...fields,
          status: 'input_required',
          statusMessage: `the MCP server ${asked[0]!.server} asks for input`,
          inputRequests: Object.fromEntries(
            asked.map((r) => [
              r.input_request_id,
              {
                method: 'elicitation/create',
                params: { mode: 'form', message: r.message, requestedSchema: r.requested_schema },
              },
            ]),
          ),
        };
      }
      case 'awaiting_approval': {
        const a = await store.approvals.forCall(project, taskId);
        if (a?.status !== 'pending') return { ...fields, status: 'working' };
        return {
          ...fields,
          status: 'input_required',
          statusMessage: `${a.tool_name} waits for a human approval`,
          inputRequests: {
            [a.approval_id]: { method: 'elicitation/create', params: approvalElicitation(a) },
          },
        };
      }
      case 'canceled':
        return { ...fields, status: 'cancelled', statusMessage: 'the call was cancelled' };
      case undefined:
        return {
          ...fields,
          status: 'failed',
          error: {
            code: ProtocolErrorCode.InternalError,
            message: 'the call was never recorded',
          },
        };
      case 'succeeded':
      case 'failed':
      case 'timeout': {
        // A tool's own failure is a result (isError), as it is without a task; only a call that
        // ended without any card is the task's error.
        const result = await calls.answered(project, taskId);
        // The MCP server's protocol error (its JSON-RPC error, or its own task failed): the
        // task failed with that error, as the server would have answered it.
        const refused = upstreamProtocolError(result);
        if (refused) {
          return {
            ...fields,
            status: 'failed',
            error: {
              code: refused.code,
              message: refused.message.replace(/^MCP error -?\d+: /, ''),
              ...(refused.data === undefined ? {} : { data: refused.data }),
            },
          };
        }
        if (result) {
          return {
            ...fields,
            status: 'completed',
            ...(r.status === 'succeeded' ? {} : { statusMessage: `the call ${r.status}` }),
            result: { ...result, resultType: 'complete' },
          };
        }
        return {
          ...fields,
          status: 'failed',
          error: {
            code: ProtocolErrorCode.InternalError,
            message: `the call ${r.status} without a result card`,
            data: { tool_call_id: taskId },
          },
        };
      }
    }
  }

  const gate = (c: { mcpReq: { envelope?: unknown } }, params: unknown) => {
    if (!declaresTasks(c.mcpReq.envelope, params)) throw needsTasks();
  };

  server.setRequestHandler('tasks/get', { params: TaskParams }, async (params, c) => {
    gate(c, params);
    return detailed(params.taskId);
  });

  server.setRequestHandler('tasks/update', { params: TaskParams }, async (params, c) => {
    gate(c, params);
    // An answer under the id of an approval the call waits for decides it; one under the id of
    // an input request of its MCP server answers that. Other keys are ignored (SEP-2663).
    const task = await detailed(params.taskId);
    const requested = 'inputRequests' in task ? Object.keys(task.inputRequests) : [];
    // The SDK lifts `inputResponses` off the params into the request context (its multi-round
    // trip retry fields).
    const parsed = InputResponses.safeParse(c.mcpReq.inputResponses ?? params['inputResponses']);
    if (!parsed.success) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        'inputResponses must map input request ids to answers',
        { taskId: params.taskId },
      );
    }
    for (const [id, raw] of Object.entries(parsed.data)) {
      if (!requested.includes(id)) continue;
      const answer = Answer.safeParse(raw);
      if (!answer.success) {
        throw new ProtocolError(
          ProtocolErrorCode.InvalidParams,
          `the answer to ${id} must be an elicitation result: ${answer.error.issues[0]?.message ?? ''}`,
          { taskId: params.taskId },
        );
      }
      const { action, content } = answer.data;
      const asked = await store.inputRequests.get(project, id);
      if (asked?.tool_call_id === params.taskId) {
        try {
          await deps.answers.record(project, asked, { action, content }, deps.caller);
        } catch (err) {
          if (!(err instanceof ApiError)) throw err;
          throw new ProtocolError(ProtocolErrorCode.InvalidParams, err.message, {
            taskId: params.taskId,
            input_request_id: id,
          });
        }
        continue;
      }
      await applyAnswer(
        deps.decider,
        { project_id: project, approval_id: id },
        deps.caller,
        answer.data,
      );
    }
    return {};
  });

  server.setRequestHandler('tasks/cancel', { params: TaskParams }, async (params, c) => {
    gate(c, params);
    if (!(await cancelTask(deps, project, params.taskId))) throw taskNotFound(params.taskId);
    return {};
  });
}
