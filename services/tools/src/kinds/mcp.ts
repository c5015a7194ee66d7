// The `mcp` kind: one tools/call on the pooled connection to the tool's server (spec names the
// server and the tool's MCP name). Progress notifications of the call become the call's
// progress events (ctx.progress: `evt.tool.<server>.progress`, the message a skills watch
// heartbeats with); the call's AbortSignal (deadline or cancel) makes the SDK send
// notifications/cancelled. A connection that cannot be opened, or dies during the call, fails the attempt with
// mcp_unavailable (retryable under the tool's retries policy) and is dropped from the pool, so
// the next attempt or call reconnects; isError is a final tool_error with the content in details.
// What the server asks meanwhile (sampling, elicitation) is answered by mcp/ask.ts; an input
// request nobody answered in time fails the call input_expired.
import { isMcpClientError, MODERN_PROTOCOL_VERSION, type McpCallResult } from '@toolmesh/mcp';
import { ToolError } from '@toolmesh/protocol';
import type { McpToolSpec } from '@toolmesh/store';
import { egressDeniedIn } from '../egress.ts';
import { toolErrorIn } from '../oauth.ts';
import type { McpPool, PooledConnection } from '../mcp/pool.ts';
import { createCallAsks, type AskDeps } from '../mcp/ask.ts';
import type { RegistryTool } from '@toolmesh/tool-service';
import { UpstreamFailure, type AttemptContext, type KindExecutor } from './kind.ts';
import { callModern } from './mcp-modern.ts';
import { MCP_TASK_STATUS, declaresTasks } from './mcp-task.ts';

export interface McpExecutorOptions {
  pool: McpPool;
  /** Where a server's questions to the client go (mcp/ask.ts). */
  asks: AskDeps;
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
      const asks = createCallAsks(o.asks, ctx, { server: spec.server });
      // An input request that expired gives the server's call up: the call fails input_expired.
      const signal = AbortSignal.any([ctx.signal, asks.expired]);
      // Again once the call ended: an OAuth token refreshed during it joins the secret values.
      const redactSecrets = () => {
        for (const value of pooled?.secretValues ?? []) ctx.redact(value);
      };
      try {
        pooled = await o.pool.get(tool.project, spec.server, signal);
        redactSecrets();
        ctx.annotate({ mcp_transport: pooled.conn.transport });
        // A 2026-07-28 client's call, to a server that speaks that revision, goes on it.
        const modern = pooled.conn.modern;
        if (ctx.mcp && modern && (await modern.supported(ctx.signal))) {
          ctx.annotate({ mcp_protocol_version: MODERN_PROTOCOL_VERSION });
          const out = await callModern(modern, spec.tool, args, tool.parameters, ctx, {
            asks,
            signal,
          });
          redactSecrets();
          return out;
        }
        // A client with Tasks, whose server cannot decide on tasks (no 2026-07-28): the mesh
        // makes the call a task, as it makes any call of such a client on its facade.
        if (declaresTasks(ctx.mcp?.client_capabilities)) ctx.progress({ status: MCP_TASK_STATUS });
        const res = await pooled.conn.callTool(spec.tool, args, {
          signal,
          onProgress: (p) => ctx.progress({ ...p }),
          // The server's log messages during the call reach its caller as progress events.
          onLog: (params) => ctx.progress({ mcp_log: params }),
          onAsk: (method, params) => asks.ask(method, params),
        });
        redactSecrets();
        if (asks.expired.aborted) throw asks.expired.reason as Error;
        return resultOf(res);
      } catch (err) {
        redactSecrets();
        if (ctx.signal.aborted) throw ctx.signal.reason as Error;
        if (asks.expired.aborted) throw asks.expired.reason as Error;
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
