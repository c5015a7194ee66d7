// MCP Tasks, 2025-11-25 experimental form (1.x SDK): a task is a view of one tool call. The task
// id is the call's tool_call_id; its status is the execution row's, its result the card. The
// SDK's Protocol answers tasks/get, tasks/result (blocking: it polls getTask), tasks/list and
// tasks/cancel through this TaskStore, which reads Postgres, so any api instance answers for any
// task, also after the instance that created it is gone. A task is recorded (state.mcp_tasks)
// before its call is published and before it is returned. Its ttl bounds the view only: the
// execution and its card stay.
import type { TaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/interfaces.js';
import { McpError, ErrorCode, type Result, type Task } from '@modelcontextprotocol/sdk/types.js';
import type { Client } from '@toolmesh/client';
import type { CallsStore, ExecutionStatus, McpTaskRecord } from '@toolmesh/store';
import { errorResult } from './call-results.ts';
import { MCP_CHANNEL, type MeshCalls } from './calls.ts';

/** How often a client is told to poll a task (and the SDK polls for a blocking tasks/result). */
export const TASK_POLL_INTERVAL_MS = 500;
const LIST_PAGE = 50;
/** tasks/cancel answers with the task's new state: how long it waits for the mesh's cancel. */
const CANCEL_SETTLE_MS = 5_000;

export function taskStatus(s: ExecutionStatus | undefined): Task['status'] {
  switch (s) {
    case 'queued':
    case 'running':
      return 'working';
    case 'awaiting_approval':
      // The call waits for a person (the approvals of the project): input the requester can give.
      return 'input_required';
    case 'succeeded':
      return 'completed';
    case 'canceled':
      return 'cancelled';
    case 'failed':
    case 'timeout':
    case undefined:
      return 'failed';
    default:
      return s satisfies never;
  }
}

export function toTask(r: McpTaskRecord): Task {
  const status = taskStatus(r.status);
  return {
    taskId: r.task_id,
    status,
    ...(r.status === 'timeout' ? { statusMessage: 'the call ran past its deadline' } : {}),
    ...(r.status === undefined ? { statusMessage: 'the call was never recorded' } : {}),
    ttl: r.ttl_ms,
    createdAt: r.created_at.toISOString(),
    lastUpdatedAt: r.updated_at.toISOString(),
    pollInterval: r.poll_interval_ms,
  };
}

const encodeCursor = (t: McpTaskRecord) =>
  Buffer.from(JSON.stringify([t.created_at.toISOString(), t.task_id])).toString('base64url');

function decodeCursor(cursor: string): { createdAt: Date; taskId: string } {
  try {
    const [at, id] = JSON.parse(Buffer.from(cursor, 'base64url').toString('utf8')) as unknown[];
    if (typeof at === 'string' && typeof id === 'string' && !Number.isNaN(Date.parse(at))) {
      return { createdAt: new Date(at), taskId: id };
    }
  } catch {
    // Falls through to the refusal below.
  }
  throw new McpError(ErrorCode.InvalidParams, 'invalid cursor');
}

/**
 * Cancels a task's call on the mesh; the tool service writes its `canceled` card. Waited for
 * (bounded) so the answer shows it. False when the task is unknown (or its view expired).
 */
export async function cancelTask(
  deps: { store: CallsStore; client: Client },
  project: string,
  taskId: string,
): Promise<boolean> {
  const get = () => deps.store.mcpTasks.get(project, taskId);
  if (!(await get())) return false;
  await deps.client.cancel({
    project,
    channel: MCP_CHANNEL,
    toolCallId: taskId,
    reason: 'MCP tasks/cancel',
  });
  const until = Date.now() + CANCEL_SETTLE_MS;
  while (Date.now() < until) {
    const now = await get();
    if (!now || taskStatus(now.status) !== 'working') return true;
    await new Promise((r) => setTimeout(r, 100));
  }
  return true;
}

/** The TaskStore of one project's facade server. Sessions do not scope tasks: the project does. */
export function createProjectTaskStore(deps: {
  store: CallsStore;
  client: Client;
  calls: MeshCalls;
  project: string;
}): TaskStore {
  const { store, client, calls, project } = deps;
  const get = (taskId: string) => store.mcpTasks.get(project, taskId);
  return {
    // Tasks are created by the facade's tools/call handler, which must choose the id (the
    // tool_call_id); the SDK's generic path is not used.
    createTask: () => Promise.reject(new Error('MCP tasks are created by tools/call only')),
    getTask: async (taskId) => {
      const t = await get(taskId);
      return t ? toTask(t) : null;
    },
    storeTaskResult: () => Promise.reject(new Error('task results are the mesh cards')),
    getTaskResult: async (taskId): Promise<Result> => {
      const t = await get(taskId);
      if (!t) throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      return (
        (await calls.answered(project, taskId)) ??
        errorResult(t.status ?? 'failed', 'the call ended without a result card', {
          tool_call_id: taskId,
        })
      );
    },
    updateTaskStatus: async (taskId, status) => {
      // The only update a client can ask for is tasks/cancel.
      if (status !== 'cancelled') return;
      if (!(await cancelTask({ store, client }, project, taskId))) {
        throw new McpError(ErrorCode.InvalidParams, `Task not found: ${taskId}`);
      }
    },
    listTasks: async (cursor) => {
      const rows = await store.mcpTasks.list(project, {
        limit: LIST_PAGE + 1,
        after: cursor ? decodeCursor(cursor) : undefined,
      });
      const page = rows.slice(0, LIST_PAGE);
      const last = page.at(-1);
      return {
        tasks: page.map(toTask),
        ...(rows.length > LIST_PAGE && last ? { nextCursor: encodeCursor(last) } : {}),
      };
    },
  };
}
