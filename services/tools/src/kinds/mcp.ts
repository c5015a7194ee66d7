// The `mcp` kind: one tools/call on the pooled connection to the tool's server (spec names the
// server and the tool's MCP name). Progress notifications of the call become the call's
// progress events (ctx.progress: `evt.tool.<server>.progress`, the message a skills watch
// heartbeats with); the call's AbortSignal (deadline or cancel) makes the SDK send
// notifications/cancelled. A connection that cannot be opened, or dies during the call, fails the attempt with
// mcp_unavailable (retryable under the tool's retries policy) and is dropped from the pool, so
// the next attempt or call reconnects; isError is a final tool_error with the content in details.
import { isMcpClientError, MODERN_PROTOCOL_VERSION, type McpCallResult } from '@toolmesh/mcp';
import type { Bus } from '@toolmesh/bus';
import { decodeMessage, encodeMessage, ToolError, type McpAskMethod } from '@toolmesh/protocol';
import type { McpToolSpec } from '@toolmesh/store';
import { egressDeniedIn } from '../egress.ts';
import { toolErrorIn } from '../oauth.ts';
import type { McpPool, PooledConnection } from '../mcp/pool.ts';
import type { RegistryTool } from '@toolmesh/tool-service';
import { UpstreamFailure, type AttemptContext, type KindExecutor } from './kind.ts';
import { callModern } from './mcp-modern.ts';

export interface McpExecutorOptions {
  pool: McpPool;
  /** Where a server's question to the client goes: the api waiting for the call. */
  bus: Bus;
}

/** A JSON-RPC error for the server: the SDK answers a thrown error with its code and data. */
class AskRefused extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'AskRefused';
    this.code = code;
    this.data = data;
  }
}
const INTERNAL_ERROR = -32603;

/**
 * What the server asks the client during a call (sampling, elicitation) goes to the api
 * instance waiting for the call (`ctl.ask.<tool_call_id>.request`), which asks the MCP client
 * that made it. Nobody waiting (a call over the bus, a client that has gone) is a refusal the
 * server sees as a JSON-RPC error: the mesh answers neither itself.
 */
async function askCaller(
  bus: Bus,
  ctx: AttemptContext,
  method: McpAskMethod,
  params: Record<string, unknown>,
): Promise<Record<string, unknown>> {
  const subject = bus.subjects.mcpAsk({
    project: ctx.project,
    channel: ctx.channel,
    toolCallId: ctx.toolCallId,
  });
  let reply;
  try {
    const msg = await bus.nc.request(subject, encodeMessage('mcp_ask', { v: 1, method, params }), {
      timeout: Math.max(1_000, ctx.deadline - Date.now()),
    });
    reply = decodeMessage('mcp_rpc_reply', msg.data);
  } catch (err) {
    const what = method === 'sampling/createMessage' ? 'sampling' : 'elicitation';
    throw new AskRefused(
      INTERNAL_ERROR,
      (err as Error).name === 'TimeoutError'
        ? `${method}: the caller did not answer before the call's deadline`
        : `${method}: no MCP client is waiting for this call to answer it (a call over the bus, or its client has gone); the mesh does not answer ${what} itself`,
    );
  }
  if (reply.error) throw new AskRefused(reply.error.code, reply.error.message, reply.error.data);
  return reply.result ?? {};
}

function specOf(tool: RegistryTool): McpToolSpec {
  const s = tool.spec as Partial<McpToolSpec>;
  if (typeof s.server !== 'string' || typeof s.tool !== 'string') {
    throw new ToolError(`tool ${tool.name} has no MCP server in its spec`, {
      code: 'internal_error',
    });
  }
  return { server: s.server, tool: s.tool };
}

/** The result of a call: the MCP content blocks, and the structured content when given. */
const resultOf = (r: McpCallResult) => ({
  content: r.content,
  ...(r.structuredContent ? { structured_content: r.structuredContent } : {}),
});

export function createMcpExecutor(o: McpExecutorOptions): KindExecutor {
  return {
    async attempt(tool, args, ctx: AttemptContext) {
      const spec = specOf(tool);
      let pooled: PooledConnection | undefined;
      // Again once the call ended: an OAuth token refreshed during it joins the secret values.
      const redactSecrets = () => {
        for (const value of pooled?.secretValues ?? []) ctx.redact(value);
      };
      try {
        pooled = await o.pool.get(tool.project, spec.server, ctx.signal);
        redactSecrets();
        ctx.annotate({ mcp_transport: pooled.conn.transport });
        // A 2026-07-28 client's call, to a server that speaks that revision, goes on it.
        const modern = pooled.conn.modern;
        if (ctx.mcp && modern && (await modern.supported(ctx.signal))) {
          ctx.annotate({ mcp_protocol_version: MODERN_PROTOCOL_VERSION });
          const out = await callModern(modern, spec.tool, args, tool.parameters, ctx);
          redactSecrets();
          return out;
        }
        const res = await pooled.conn.callTool(spec.tool, args, {
          signal: ctx.signal,
          onProgress: (p) => ctx.progress({ ...p }),
          // The server's log messages during the call reach its caller as progress events.
          onLog: (params) => ctx.progress({ mcp_log: params }),
          onAsk: (method, params) => askCaller(o.bus, ctx, method, params),
        });
        redactSecrets();
        return resultOf(res);
      } catch (err) {
        redactSecrets();
        if (ctx.signal.aborted) throw ctx.signal.reason as Error;
        // A refused address is final, not a transport failure to retry.
        const denied = egressDeniedIn(err);
        if (denied) throw denied;
        // What the OAuth fetch threw (upstream_unauthorized, oauth_failed, secret_unavailable)
        // says more than the transport failure the SDK wrapped it in.
        const own = toolErrorIn(err);
        if (own && own !== err) throw own;
        if (!isMcpClientError(err)) throw err;
        switch (err.reason) {
          case 'connect_failed':
          case 'connection_lost':
            // A failed open is forgotten by the pool itself; a lost connection is closed here.
            if (pooled) await o.pool.drop(tool.project, spec.server, pooled.conn);
            throw new UpstreamFailure(err.message, {
              code: 'mcp_unavailable',
              retryable: true,
              details: { reason: err.reason, server: spec.server },
              cause: err,
            });
          case 'tool_error':
            throw new ToolError(err.message, {
              code: 'tool_error',
              ...(err.details ? { details: err.details } : {}),
            });
          case 'rpc_error':
          case 'invalid_tool_name':
            throw new ToolError(err.message, {
              code: 'mcp_error',
              ...(err.details ? { details: err.details } : {}),
            });
          case 'timeout':
          case 'canceled':
            throw err;
          default: {
            const never: never = err.reason;
            throw new Error(`unknown MCP error reason ${String(never)}`, { cause: err });
          }
        }
      }
    },
    close: () => o.pool.close(),
  };
}
