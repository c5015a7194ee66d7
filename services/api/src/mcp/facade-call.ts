// tools/call of a facade scope, whichever SDK line and revision carries it: the search tools'
// answer, or a tool call on the mesh (calls.ts) with its progress and the MCP server's log
// messages passed on, a task of one, or a call whose wait is detached once it waits for a person
// (an approval, an input request) or once its MCP server made it a task.
import {
  ErrorCode,
  McpError,
  type CallToolRequest,
  type CallToolResult,
  type CreateTaskResult,
  type ProgressNotification,
} from '@modelcontextprotocol/sdk/types.js';
import type { McpCallEnvelope, ToolProgressEvent } from '@toolmesh/protocol';
import type { AgentsStore, CallsStore, ToolRecord } from '@toolmesh/store';
import type { ApprovalDecider } from '../approvals.ts';
import { ApiError } from '../errors.ts';
import { createArgumentsChecker } from '../routes/executions-args.ts';
import {
  applyAnswer,
  approvalElicitation,
  type ElicitAnswer,
  type ElicitParams,
} from './approval-input.ts';
import { type CallerAsk } from './call-asks.ts';
import { DETACHED, errorResult } from './call-results.ts';
import { IDEMPOTENCY_META_KEY, type MeshCalls } from './calls.ts';
import { mcpSpecOf, type FacadeScope, type ToolView } from './facade-tools.ts';
import { logPasses, noticeFor } from './notices.ts';
import { CALL_TOOL, SEARCH_TOOLS, search } from './search.ts';
import { TASK_POLL_INTERVAL_MS, toTask } from './tasks.ts';

/** A call that waits for an approval, its wait detached (handleCall's `park`). */
export interface Parked {
  /** Waiting for an approval, or for an input request of its MCP server (modern-elicit.ts). */
  parked:
    | { approvalId: string; toolCallId: string; tool: ToolRecord }
    | { inputRequestId: string; toolCallId: string; tool: ToolRecord };
}

/**
 * A call its MCP server made a task (or that waits for an approval), its wait detached
 * (handleCall's `taskOnServer`): the mesh answers it with its own task.
 */
export interface BecameTask {
  becameTask: string;
}
/** The progress status of a call its MCP server made a task (services/tools mcp-task.ts). */
const MCP_TASK_STATUS = 'mcp_task';

/** What a transport gives one tools/call beyond its params. */
export interface CallExtra {
  signal: AbortSignal;
  sendNotification: (n: ProgressNotification) => Promise<void>;
  /**
   * Notifies the client outside this request (a 2025 session's stream): a task's progress
   * after its request was answered. Without it a task sends no progress.
   */
  notifyLater?: ((n: ProgressNotification) => Promise<void>) | undefined;
  /** Present when the client declared elicitation: asks it to decide an approval. */
  elicit?: ((p: ElicitParams, timeoutMs: number) => Promise<ElicitAnswer>) | undefined;
  /**
   * Stop waiting once the call waits for an approval (or an input request), and answer `{parked}` instead (the
   * call goes on; a 2026-07-28 request asks its client with an input_required result).
   */
  park?: boolean | undefined;
  /**
   * A 2026-07-28 client with Tasks on a server's own endpoint: the server decides whether
   * the call is a task. Stop waiting once it made one (or once the call waits for an
   * approval) and answer `{becameTask}`; the call goes on.
   */
  taskOnServer?: boolean | undefined;
  /** Asks this client what the call's MCP server asks (a 2025 session's stream). */
  ask?: CallerAsk | undefined;
  /** The client's log level: the MCP server's log messages during the call at or above it
   * are passed on; none without one. */
  logLevel?: string | undefined;
  /** A 2026-07-28 client's envelope, for the MCP server (modern-input.ts). */
  mcp?: McpCallEnvelope | undefined;
}

export type HandleCall = (
  scope: FacadeScope,
  params: CallToolRequest['params'],
  extra: CallExtra,
) => Promise<CallToolResult | CreateTaskResult | Parked | BecameTask>;

export function createCallHandler(deps: {
  store: CallsStore & AgentsStore;
  calls: MeshCalls;
  view: ToolView;
  /** More visible tools than this: the search tools stand for them. */
  searchThreshold: number;
  decider: ApprovalDecider;
  /** tools.max_arguments_depth. */
  maxArgumentsDepth: number;
}): HandleCall {
  const { store, calls, view, searchThreshold, decider } = deps;
  const checker = createArgumentsChecker({ maxDepth: deps.maxArgumentsDepth });

  /**
   * Asks the client to decide a call that waits for approval (elicitation). A failure to ask, or
   * no answer, leaves the approval to the api, the CLI or the console.
   */
  async function askApproval(
    scope: FacadeScope,
    approvalId: string,
    elicit: (p: ElicitParams, timeoutMs: number) => Promise<ElicitAnswer>,
  ): Promise<void> {
    const a = await store.approvals.get(scope.project, approvalId);
    if (a?.status !== 'pending') return;
    const answer = await elicit(
      approvalElicitation(a),
      Math.max(1_000, a.expires_at.getTime() - Date.now()),
    );
    await applyAnswer(decider, a, scope.caller ?? 'mcp', answer);
  }

  /**
   * tools/call of a scope, whichever SDK line carries it: a tool call on the mesh (or a task of
   * one, or the search tools' answer).
   */
  async function handleCall(
    scope: FacadeScope,
    params: CallToolRequest['params'],
    extra: CallExtra,
  ): Promise<CallToolResult | CreateTaskResult | Parked | BecameTask> {
    let name = params.name;
    let args = params.arguments ?? {};
    const searching = name === SEARCH_TOOLS || name === CALL_TOOL;
    const table = searching ? await view.visible(scope) : undefined;
    if (table && table.entries.length > searchThreshold) {
      if (name === SEARCH_TOOLS) {
        const { query, limit } = args;
        if (typeof query !== 'string' || query.trim() === '') {
          throw new McpError(ErrorCode.InvalidParams, 'search_tools needs a query');
        }
        const found = search(table, query, typeof limit === 'number' ? limit : undefined);
        const tools = found.map((e) => view.toMcpTool(e.mcpName, e.tool));
        return {
          content: [{ type: 'text', text: JSON.stringify(tools) }],
          structuredContent: { tools },
        };
      }
      if (name === CALL_TOOL) {
        const inner = args['arguments'] ?? {};
        if (typeof args['name'] !== 'string' || typeof inner !== 'object' || inner === null) {
          throw new McpError(
            ErrorCode.InvalidParams,
            'call_tool needs a name (a string) and arguments (an object)',
          );
        }
        name = args['name'];
        args = inner as Record<string, unknown>;
      }
    }
    const tool = await view.resolve(scope, name, table);
    if (!tool) {
      throw new McpError(ErrorCode.InvalidParams, `unknown tool ${JSON.stringify(name)}`);
    }
    let issues;
    try {
      issues = checker.check(tool, args);
    } catch (err) {
      if (err instanceof ApiError)
        return errorResult(err.code, err.message, { details: err.details });
      throw err;
    }
    if (issues) {
      const first = issues[0];
      return errorResult(
        'invalid_arguments',
        `invalid arguments for ${tool.name}: ${first ? `${first.path}: ${first.message}` : 'schema mismatch'}`,
        { issues },
      );
    }
    const meta = params._meta;
    const key = meta?.[IDEMPOTENCY_META_KEY];
    if (key !== undefined && (typeof key !== 'string' || key.length === 0 || key.length > 255)) {
      throw new McpError(
        ErrorCode.InvalidParams,
        `_meta["${IDEMPOTENCY_META_KEY}"] must be a string of 1-255 characters`,
      );
    }
    const traceparent = meta?.['traceparent'];
    const progressToken = meta?.progressToken;
    const task = params.task;
    // The MCP server's log messages during the call, at or above the client's level.
    const logLevel = extra.logLevel;
    const callServer = mcpSpecOf(tool)?.server;
    const progressTo = (send: ((n: ProgressNotification) => Promise<void>) | undefined) =>
      progressForwarder(
        { progressToken, logLevel, endpointServer: scope.server, callServer },
        send,
      );
    if (task) {
      // A task: recorded before the call is published and before it is returned; its id is
      // the tool_call_id, so any instance answers tasks/get, tasks/result and tasks/cancel.
      const ttlMs = task.ttl ?? null;
      const started = await calls.start(
        {
          project: scope.project,
          tool,
          arguments: args,
          idempotencyKey: key,
          traceparent: typeof traceparent === 'string' ? traceparent : undefined,
          onProgress: progressTo(extra.notifyLater),
        },
        async (id) => {
          await store.mcpTasks.create({
            projectId: scope.project,
            taskId: id,
            ttlMs,
            pollIntervalMs: TASK_POLL_INTERVAL_MS,
          });
        },
      );
      if (started.refused) {
        const error = started.refused.structuredContent?.['error'] as { message?: string };
        throw new McpError(ErrorCode.InvalidParams, error.message ?? 'the task was refused');
      }
      const row = await store.mcpTasks.get(scope.project, started.id);
      if (!row) throw new McpError(ErrorCode.InternalError, 'the task expired at once');
      return { task: toTask(row) };
    }
    let onProgress = progressTo(extra.sendNotification);
    const elicit = extra.elicit;
    if (elicit) {
      // The call's progress event says when it starts waiting for a person: ask this client.
      const forward = onProgress;
      const asked = new Set<string>();
      onProgress = (ev) => {
        const id = ev.detail?.['approval_id'];
        if (ev.detail?.['status'] === 'awaiting_approval' && typeof id === 'string') {
          if (!asked.has(id)) {
            asked.add(id);
            askApproval(scope, id, elicit).catch(() => undefined);
          }
        }
        forward?.(ev);
      };
    }
    let parked: Parked['parked'] | undefined;
    let becameTask: string | undefined;
    const detach = extra.park || extra.taskOnServer ? new AbortController() : undefined;
    if (detach) {
      const forward = onProgress;
      onProgress = (ev) => {
        const id = ev.detail?.['approval_id'];
        const input = ev.detail?.['input_request_id'];
        const status = ev.detail?.['status'];
        if (extra.taskOnServer) {
          // A client that speaks Tasks gets one whatever the call waits for: its server's task,
          // an approval, or an input request (tasks/get shows it as input_required).
          if (
            !becameTask &&
            (status === MCP_TASK_STATUS ||
              status === 'awaiting_approval' ||
              status === 'awaiting_input')
          ) {
            becameTask = ev.tool_call_id;
            detach.abort();
          }
        } else if (!parked && status === 'awaiting_approval' && typeof id === 'string') {
          parked = { approvalId: id, toolCallId: ev.tool_call_id, tool };
          detach.abort();
        } else if (!parked && status === 'awaiting_input' && typeof input === 'string') {
          parked = { inputRequestId: input, toolCallId: ev.tool_call_id, tool };
          detach.abort();
        }
        forward?.(ev);
      };
    }
    const result = await calls.run({
      project: scope.project,
      tool,
      arguments: args,
      idempotencyKey: key,
      traceparent: typeof traceparent === 'string' ? traceparent : undefined,
      signal: extra.signal,
      detach: detach?.signal,
      onProgress,
      ask: extra.ask,
      mcp: extra.mcp,
    });
    if (result === DETACHED && becameTask) return { becameTask };
    return result === DETACHED && parked ? { parked } : result;
  }

  return handleCall;
}

/**
 * A call's progress events as notifications/progress on `send`: an MCP server's own numbers as
 * it sent them, else counted up; its log messages at or above the client's level as
 * notifications/message. None without a progress token or a log level.
 */
function progressForwarder(
  o: {
    progressToken: string | number | undefined;
    logLevel: string | undefined;
    /** The server whose own endpoint the call came through, if any (names stay its own). */
    endpointServer: string | undefined;
    /** The MCP server the called tool belongs to, if any. */
    callServer: string | undefined;
  },
  send: ((n: ProgressNotification) => Promise<void>) | undefined,
): ((ev: ToolProgressEvent) => void) | undefined {
  const { progressToken, logLevel, callServer } = o;
  const logs = logLevel !== undefined;
  if ((progressToken === undefined && !logs) || !send) return undefined;
  let progress = 0;
  return (ev: ToolProgressEvent) => {
    const log = ev.detail?.['mcp_log'];
    if (typeof log === 'object' && log !== null) {
      const params = log as Record<string, unknown>;
      if (logs && callServer !== undefined && logPasses(params['level'], logLevel)) {
        const n = noticeFor(o.endpointServer, callServer, {
          v: 1,
          method: 'notifications/message',
          params,
        });
        if (n) {
          const out = { method: n.method, params: n.params };
          send(out as unknown as ProgressNotification).catch(() => undefined);
        }
      }
      return;
    }
    if (progressToken === undefined) return;
    // An MCP server's own progress (the tool service passes on its numbers): as it sent it.
    const own = ev.detail?.['progress'];
    if (typeof own === 'number') {
      const { total, message } = ev.detail ?? {};
      send({
        method: 'notifications/progress',
        params: {
          progressToken,
          progress: own,
          ...(typeof total === 'number' ? { total } : {}),
          ...(typeof message === 'string' ? { message } : {}),
        },
      }).catch(() => undefined);
      return;
    }
    // Our own count keeps progress increasing whatever the tool reports; a message the tool
    // gave (a watch's) is passed on, else the detail.
    progress += 1;
    const said = ev.detail?.['message'];
    const detail =
      typeof said === 'string' ? said : ev.detail ? JSON.stringify(ev.detail) : undefined;
    send({
      method: 'notifications/progress',
      params: { progressToken, progress, ...(detail ? { message: detail } : {}) },
    }).catch(() => undefined);
  };
}
