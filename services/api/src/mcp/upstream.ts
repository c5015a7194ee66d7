// The facade's way to an MCP server's other methods (resources, prompts, completion, logging):
// one core NATS request on `ctl.mcp.<server>.rpc`, answered by a tools service over its pooled
// connection to the server (services/tools/src/mcp/rpc.ts). Tool calls never come this way:
// they are mesh calls with cards (calls.ts). The server's JSON-RPC error comes back with its code,
// message and data, so a client sees what the server said.
import type { NatsConnection } from '@nats-io/transport-node';
import { ErrorCode } from '@modelcontextprotocol/sdk/types.js';
import {
  SYSTEM_CHANNEL,
  decodeMessage,
  encodeMessage,
  type McpCallEnvelope,
  type McpPassthroughMethod,
  type Subjects,
} from '@toolmesh/protocol';

/**
 * A JSON-RPC error to answer with: both SDK lines answer a thrown error with its `code`,
 * `message` and `data` (McpError would prefix the message with "MCP error <code>:" once more).
 */
export class UpstreamError extends Error {
  readonly code: number;
  readonly data: unknown;
  constructor(code: number, message: string, data?: unknown) {
    super(message);
    this.name = 'UpstreamError';
    this.code = code;
    this.data = data;
  }
}

export interface Upstream {
  /** The server's result as sent; throws UpstreamError with the server's (or the mesh's) error. */
  request(
    project: string,
    server: string,
    method: McpPassthroughMethod,
    params: Record<string, unknown> | undefined,
    /** A 2026-07-28 client's envelope: the server gets the request on that revision. */
    mcp?: McpCallEnvelope,
  ): Promise<Record<string, unknown>>;
}

export function createUpstream(o: {
  nc: NatsConnection;
  subjects: Subjects;
  /** [api] mcp_refresh_wait_ms: how long a tools service may take (connect included). */
  timeoutMs: number;
}): Upstream {
  return {
    async request(project, server, method, params, mcp) {
      const subject = o.subjects.mcpRpc({ project, channel: SYSTEM_CHANNEL, server });
      let reply;
      try {
        const msg = await o.nc.request(
          subject,
          encodeMessage('mcp_rpc', { v: 1, method, params: params ?? {}, ...(mcp ? { mcp } : {}) }),
          { timeout: o.timeoutMs },
        );
        reply = decodeMessage('mcp_rpc_reply', msg.data);
      } catch (err) {
        throw new UpstreamError(
          ErrorCode.InternalError,
          (err as Error).name === 'TimeoutError'
            ? `the MCP server did not answer ${method} within ${o.timeoutMs} ms`
            : `no tools service answered ${method} (is services/tools running?)`,
        );
      }
      if (reply.error) {
        throw new UpstreamError(reply.error.code, reply.error.message, reply.error.data);
      }
      return reply.result ?? {};
    },
  };
}
