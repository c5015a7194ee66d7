// MCP failures as mesh errors, mapped at this one boundary: whatever the SDK or a transport
// throws leaves this package as a McpClientError with a stable protocol code and a finer reason.
import {
  McpError as SdkMcpError,
  ErrorCode as SdkErrorCode,
} from '@modelcontextprotocol/sdk/types.js';
import { MeshError, messageWithCause, type ErrorCode, type ErrorOptions } from '@toolmesh/protocol';

export const McpErrorReason = {
  /** The server could not be reached or refused the handshake. */
  connect_failed: 'connect_failed',
  /** The connection died (process exited, stream closed) while a request was in flight. */
  connection_lost: 'connection_lost',
  /** The server answered a request with a JSON-RPC error. */
  rpc_error: 'rpc_error',
  /** `tools/call` returned `isError: true`: the tool itself failed. */
  tool_error: 'tool_error',
  /** The request outlived its time. */
  timeout: 'timeout',
  /** The caller aborted the request; the server was sent notifications/cancelled. */
  canceled: 'canceled',
  /** A server-side tool name that cannot become a registry id. */
  invalid_tool_name: 'invalid_tool_name',
} as const;
export type McpErrorReason = (typeof McpErrorReason)[keyof typeof McpErrorReason];

function codeFor(reason: McpErrorReason): ErrorCode {
  switch (reason) {
    case 'connect_failed':
    case 'connection_lost':
      return 'mcp_unavailable';
    case 'rpc_error':
      return 'mcp_error';
    case 'tool_error':
      return 'tool_error';
    case 'timeout':
      return 'timeout';
    case 'canceled':
      return 'canceled';
    case 'invalid_tool_name':
      return 'invalid_arguments';
    default: {
      const never: never = reason;
      throw new Error(`unknown MCP error reason ${String(never)}`);
    }
  }
}

export class McpClientError extends MeshError {
  readonly reason: McpErrorReason;
  constructor(reason: McpErrorReason, message: string, options: ErrorOptions = {}) {
    super(codeFor(reason), message, options);
    this.reason = reason;
  }
}

export function isMcpClientError(err: unknown): err is McpClientError {
  return err instanceof McpClientError;
}

/**
 * Maps what a request threw. `aborted` is the caller's signal: the SDK rejects an aborted
 * request with a RequestTimeout McpError whatever the reason, so the signal decides.
 */
export function mapRequestError(
  err: unknown,
  what: string,
  signal: AbortSignal | undefined,
  connectionDead: boolean,
): McpClientError {
  if (err instanceof McpClientError) return err;
  if (signal?.aborted) {
    return new McpClientError('canceled', `${what} was canceled`, { cause: signal.reason });
  }
  if (err instanceof SdkMcpError) {
    if (err.code === (SdkErrorCode.ConnectionClosed as number) || connectionDead) {
      return new McpClientError('connection_lost', `${what}: the MCP connection closed`, {
        cause: err,
      });
    }
    if (err.code === (SdkErrorCode.RequestTimeout as number)) {
      return new McpClientError('timeout', `${what} timed out`, { cause: err });
    }
    return new McpClientError('rpc_error', `${what}: ${err.message}`, {
      cause: err,
      details: { mcp_code: err.code, ...(err.data === undefined ? {} : { data: err.data }) },
    });
  }
  const message = messageWithCause(err);
  // Anything else (fetch failed, a stream reset, a write to a dead process) is the transport.
  return new McpClientError('connection_lost', `${what}: ${message}`, { cause: err });
}
