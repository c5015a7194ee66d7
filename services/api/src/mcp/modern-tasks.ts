// MCP Tasks on the 2026-07-28 revision: the `io.modelcontextprotocol/tasks` extension. The same
// durable rows as the 2025-11 form (tasks.ts): the task id is the call's tool_call_id, the state
// the execution's, the result its card, so any api instance answers for any task. Differences
// of the revision: the server chooses the ttl (`[api] mcp_task_ttl_ms`), a task is created only
// when the request's `_meta` client capabilities declare the extension, and `tasks/get` carries
// the outcome itself (the result, or the error); there is no tasks/result or tasks/list. A call
// waiting for a human approval is `input_required`, its input request an elicitation whose key
// is the approval id; tasks/update with the answer under that key decides it (approval-input.ts).
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Client } from '@toolmesh/client';
import type { McpTaskRecord, Store } from '@toolmesh/store';
import type { MeshCalls } from './calls.ts';
import { cancelTask } from './tasks.ts';
import type { ApprovalDecider } from '../approvals.ts';
import { applyAnswer, approvalElicitation, type ElicitAnswer } from './approval-input.ts';

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
const InputResponses = z.record(
  z.string(),
  z.looseObject({
    action: z.enum(['accept', 'decline', 'cancel']),
    content: z.record(z.string(), z.unknown()).optional(),
  }),
);

/** Registers tasks/get, tasks/update and tasks/cancel of one project on a modern server. */
export function registerModernTasks(
  server: Server,
  deps: {
    store: Store;
    client: Client;
    calls: MeshCalls;
    project: string;
    decider: ApprovalDecider;
    /** Who answers an approval for this request's client. */
    caller: string;
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
      case 'running':
        return { ...fields, status: 'working' };
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

  server.setRequestHandler('tasks/get', { params: TaskParams }, async (params) =>
    detailed(params.taskId),
  );

  server.setRequestHandler('tasks/update', { params: TaskParams }, async (params, c) => {
    // The only input a mesh call asks for is a human approval (no elicitation or sampling reaches
    // the tools): an answer under the pending approval's id decides it; anything else is refused.
    const task = await detailed(params.taskId);
    const requested = 'inputRequests' in task ? Object.keys(task.inputRequests) : [];
    // The SDK lifts `inputResponses` off the params into the request context (its multi-round
    // trip retry fields); an elicitation answer is the only kind a mesh call asks for.
    const parsed = InputResponses.safeParse(c.mcpReq.inputResponses ?? params['inputResponses']);
    if (!parsed.success) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `inputResponses must map input request ids to elicitation answers: ${parsed.error.issues[0]?.message ?? ''}`,
        { taskId: params.taskId },
      );
    }
    const responses = parsed.data;
    const answered = Object.keys(responses);
    const unknown = answered.filter((k) => !requested.includes(k));
    if (requested.length === 0 || unknown.length > 0) {
      throw new ProtocolError(
        ProtocolErrorCode.InvalidParams,
        `task ${params.taskId} is ${task.status} and requested no input${unknown.length > 0 ? ` named ${unknown.join(', ')}` : ''}`,
        { taskId: params.taskId, status: task.status },
      );
    }
    for (const id of answered) {
      await applyAnswer(
        deps.decider,
        { project_id: project, approval_id: id },
        deps.caller,
        responses[id] as ElicitAnswer,
      );
    }
    return {};
  });

  server.setRequestHandler('tasks/cancel', { params: TaskParams }, async (params) => {
    if (!(await cancelTask(deps, project, params.taskId))) throw taskNotFound(params.taskId);
    return {};
  });
}
