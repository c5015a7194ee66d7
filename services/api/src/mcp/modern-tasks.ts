// MCP Tasks on the 2026-07-28 revision: the `io.modelcontextprotocol/tasks` extension. The same
// durable rows as the 2025-11 form (tasks.ts): the task id is the call's tool_call_id, the state
// the execution's, the result its card, so any api instance answers for any task. Differences
// of the revision: the server chooses the ttl (`[api] mcp_task_ttl_ms`), a task is created only
// when the request's `_meta` client capabilities declare the extension, and `tasks/get` carries
// the outcome itself (the result, or the error); there is no tasks/result or tasks/list.
import { ProtocolError, ProtocolErrorCode, type Server } from '@modelcontextprotocol/server';
import { z } from 'zod';
import type { Client } from '@toolmesh/client';
import type { McpTaskRecord, Store } from '@toolmesh/store';
import type { MeshCalls } from './calls.ts';
import { cancelTask } from './tasks.ts';

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

/** Registers tasks/get, tasks/update and tasks/cancel of one project on a modern server. */
export function registerModernTasks(
  server: Server,
  deps: { store: Store; client: Client; calls: MeshCalls; project: string },
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
      case 'awaiting_approval':
        return {
          ...fields,
          status: 'working',
          statusMessage: 'the call awaits a human approval (GET /v1/projects/:p/approvals)',
        };
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

  server.setRequestHandler('tasks/update', { params: TaskParams }, async (params) => {
    // Mesh calls never ask their requester for input (no elicitation or sampling reaches the
    // tools), so a task is never input_required: an update for a live task is refused.
    const task = await detailed(params.taskId);
    throw new ProtocolError(
      ProtocolErrorCode.InvalidParams,
      `task ${params.taskId} is ${task.status} and requested no input`,
      { taskId: params.taskId, status: task.status },
    );
  });

  server.setRequestHandler('tasks/cancel', { params: TaskParams }, async (params) => {
    if (!(await cancelTask(deps, project, params.taskId))) throw taskNotFound(params.taskId);
    return {};
  });
}
