// A call of an MCP tool made by a 2026-07-28 client, to a server that speaks that revision: one
// stateless tools/call carrying the client's capabilities and, on a re-sent request, its answers
// and the server's requestState (ctx.mcp), so the server sees the client as it is. The server's
// answer is the call's result as sent: a complete result, its isError content (tool_error), or
// `input_required` (SEP-2322), kept as `mcp_input_required` for the api to hand to the client.
// A JSON-RPC error of the server is an mcp_error whose details carry it (`mcp_error`), so the
// api can answer the client with the server's own code. A task the server made of the call
// (the client declared the tasks extension) is followed to its end (mcp-task.ts).
import { McpClientError, textOf, type ModernChannel } from '@toolmesh/mcp';
import { ToolError } from '@toolmesh/protocol';
import type { AttemptContext } from './kind.ts';
import type { CallAsks } from '../mcp/ask.ts';
import { followServerTask } from './mcp-task.ts';

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

export async function callModern(
  channel: ModernChannel,
  name: string,
  args: Record<string, unknown>,
  inputSchema: Record<string, unknown>,
  ctx: AttemptContext,
  task: { asks: CallAsks; signal: AbortSignal },
): Promise<unknown> {
  const env = ctx.mcp!;
  let reply;
  try {
    reply = await channel.request(
      'tools/call',
      {
        name,
        arguments: args,
        ...(env.input_responses ? { inputResponses: env.input_responses } : {}),
        ...(env.request_state !== undefined ? { requestState: env.request_state } : {}),
        _meta: { progressToken: ctx.toolCallId },
      },
      {
        clientCapabilities: env.client_capabilities,
        inputSchema,
        ...(env.param_headers ? { paramHeaders: env.param_headers } : {}),
        signal: ctx.signal,
        onNotification: (method, params) => {
          if (method === 'notifications/progress' && typeof params['progress'] === 'number') {
            ctx.progress({
              progress: params['progress'],
              ...(typeof params['total'] === 'number' ? { total: params['total'] } : {}),
              ...(typeof params['message'] === 'string' ? { message: params['message'] } : {}),
            });
          } else if (method === 'notifications/message') {
            ctx.progress({ mcp_log: params });
          }
        },
      },
    );
  } catch (err) {
    if (err instanceof McpClientError || ctx.signal.aborted) throw err;
    throw new McpClientError('connection_lost', `tools/call ${name}: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if ('error' in reply) {
    throw new ToolError(`${name}: ${reply.error.message}`, {
      code: 'mcp_error',
      details: { mcp_error: reply.error },
    });
  }
  const r = reply.result;
  if (r['resultType'] === 'task') {
    return followServerTask(channel, name, r, ctx, task.asks, task.signal);
  }
  if (r['resultType'] === 'input_required') {
    return {
      content: [],
      mcp_input_required: {
        inputRequests: isRecord(r['inputRequests']) ? r['inputRequests'] : {},
        ...(typeof r['requestState'] === 'string' ? { requestState: r['requestState'] } : {}),
      },
    };
  }
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
