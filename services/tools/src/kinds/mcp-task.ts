// A task an MCP server created for a 2026-07-28 call (the `io.modelcontextprotocol/tasks`
// extension, SEP-2663), followed to its end inside the mesh call that made it, so the call's one
// card holds its outcome. The call's progress event `{status: "mcp_task"}` tells the api that
// the server made the call a task (the api then answers its client with the mesh's own durable
// task, whose id is the tool_call_id). The server's task is polled with tasks/get at its
// pollIntervalMs; what it asks meanwhile (input_required) is asked as any question of a server
// during a call (ask.ts: an elicitation becomes a durable input request that any api instance
// answers) and the answer goes back with tasks/update, each as it comes; the mesh call's cancel
// or deadline sends tasks/cancel. A completed task is the call's result (isError a tool_error),
// a failed one the server's protocol error (mcp_error with its code), a cancelled one too.
import { textOf, type ModernChannel } from '@toolmesh/mcp';
import { ToolError, type McpAskMethod } from '@toolmesh/protocol';
import type { AttemptContext } from './kind.ts';
import type { CallAsks } from '../mcp/ask.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
/** The progress status that says the call became a task. */
export const MCP_TASK_STATUS = 'mcp_task';
const MIN_POLL_MS = 50;
const MAX_POLL_MS = 5_000;
/** A tasks/cancel the server does not answer does not hold the cancelled call longer. */
const CANCEL_TIMEOUT_MS = 5_000;
/** tasks/get failing this many times in a row (the server unreachable) fails the call. */
const MAX_POLL_FAILURES = 5;

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Do a client's capabilities declare the tasks extension? */
export function declaresTasks(capabilities: Record<string, unknown> | undefined): boolean {
  const ext = capabilities?.['extensions'];
  return isRecord(ext) && isRecord(ext[TASKS_EXTENSION]);
}

const ASKABLE = new Set<string>(['elicitation/create', 'sampling/createMessage']);

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}

/**
 * Follows the server's task `created` (its CreateTaskResult) to the end; returns the call's
 * result as callModern does, or throws the call's error.
 */
export async function followServerTask(
  channel: ModernChannel,
  name: string,
  created: Record<string, unknown>,
  ctx: AttemptContext,
  asks: CallAsks,
  signal: AbortSignal,
): Promise<unknown> {
  const taskId = created['taskId'];
  if (typeof taskId !== 'string' || taskId === '') {
    throw new ToolError(`${name}: the server answered a task without a taskId`, {
      code: 'mcp_error',
    });
  }
  const clientCapabilities = ctx.mcp?.client_capabilities ?? {};
  const polled = Number(created['pollIntervalMs']);
  const pollMs = Number.isFinite(polled)
    ? Math.min(MAX_POLL_MS, Math.max(MIN_POLL_MS, polled))
    : 500;
  ctx.progress({ status: MCP_TASK_STATUS });
  const rpc = async (method: string, params: Record<string, unknown>, s: AbortSignal) => {
    const reply = await channel.request(
      method,
      { taskId, ...params },
      {
        clientCapabilities,
        signal: s,
      },
    );
    if ('error' in reply) {
      throw new ToolError(`${name}: ${method}: ${reply.error.message}`, {
        code: 'mcp_error',
        details: { mcp_error: reply.error },
      });
    }
    return reply.result;
  };
  const cancelServerTask = () =>
    rpc('tasks/cancel', {}, AbortSignal.timeout(CANCEL_TIMEOUT_MS)).catch(() => undefined);

  // Questions being answered (by key): each answer goes back on its own as it comes. A key
  // whose answer was sent is free again once the server no longer lists it (a later round may
  // ask under the same key).
  const asking = new Set<string>();
  const sent = new Set<string>();
  let failure: unknown;
  const answer = (key: string, request: Record<string, unknown>) => {
    asking.add(key);
    const method = request['method'];
    const params = isRecord(request['params']) ? request['params'] : {};
    void (async () => {
      if (typeof method !== 'string' || !ASKABLE.has(method)) {
        throw new ToolError(
          `${name}: the server's task asks ${String(method)}, which the mesh cannot answer`,
          { code: 'mcp_error' },
        );
      }
      const given = await asks.ask(method as McpAskMethod, params);
      await rpc('tasks/update', { inputResponses: { [key]: given } }, signal);
      sent.add(key);
    })().catch((err: unknown) => {
      // What the mesh could not answer (sampling refused, say) ends the call with that error.
      const e = err as { code?: unknown; message?: string };
      failure ??=
        err instanceof ToolError
          ? err
          : new ToolError(`${name}: the server's task asked ${String(method)}: ${e.message}`, {
              code: 'mcp_error',
              details: {
                mcp_error: {
                  code: typeof e.code === 'number' ? e.code : -32603,
                  message: e.message ?? 'unanswered',
                },
              },
            });
    });
  };

  let pollFailures = 0;
  for (;;) {
    if (signal.aborted || failure !== undefined) {
      await cancelServerTask();
      if (signal.aborted) throw signal.reason as Error;
      throw failure as Error;
    }
    let task: Record<string, unknown>;
    try {
      task = await rpc('tasks/get', {}, signal);
      pollFailures = 0;
    } catch (err) {
      if (signal.aborted) continue;
      // The server's own answer (its task unknown, say) is final; a failure to reach it is
      // tried again at the poll interval, a few times.
      if (err instanceof ToolError) throw err;
      if (++pollFailures >= MAX_POLL_FAILURES) {
        throw new ToolError(
          `${name}: the server's task ${taskId} could not be followed: ${(err as Error).message}`,
          { code: 'mcp_unavailable', details: { server_task_id: taskId }, cause: err },
        );
      }
      await sleep(pollMs, signal);
      continue;
    }
    switch (task['status']) {
      case 'completed': {
        const r = isRecord(task['result']) ? task['result'] : {};
        const content = Array.isArray(r['content']) ? (r['content'] as unknown[]) : [];
        const structured = isRecord(r['structuredContent']) ? r['structuredContent'] : undefined;
        if (r['isError'] === true) {
          throw new ToolError(`${name} failed: ${textOf(content as never) || 'isError'}`, {
            code: 'tool_error',
            details: { content, ...(structured ? { structured_content: structured } : {}) },
          });
        }
        return { content, ...(structured ? { structured_content: structured } : {}) };
      }
      case 'failed': {
        const e = isRecord(task['error']) ? task['error'] : {};
        const error = {
          code: typeof e['code'] === 'number' ? e['code'] : -32603,
          message: typeof e['message'] === 'string' ? e['message'] : 'the task failed',
          ...(e['data'] === undefined ? {} : { data: e['data'] }),
        };
        throw new ToolError(`${name}: ${error.message}`, {
          code: 'mcp_error',
          details: { mcp_error: error },
        });
      }
      case 'cancelled':
        throw new ToolError(`${name}: the server cancelled its task`, {
          code: 'mcp_error',
          details: { mcp_error: { code: -32603, message: 'the server cancelled its task' } },
        });
      default: {
        const requests = isRecord(task['inputRequests']) ? task['inputRequests'] : {};
        for (const key of sent) {
          if (!(key in requests)) {
            sent.delete(key);
            asking.delete(key);
          }
        }
        if (task['status'] !== 'input_required') break;
        for (const [key, request] of Object.entries(requests)) {
          if (!asking.has(key) && isRecord(request)) answer(key, request);
        }
        break;
      }
    }
    await sleep(pollMs, signal);
  }
}
