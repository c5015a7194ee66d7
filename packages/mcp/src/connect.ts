// Opening an MCP connection: which transport carries it. Streamable HTTP, falling back to the
// older HTTP+SSE transport when the server answers the streamable POST with a 4xx other than
// 401/403 (as the spec's backwards-compatibility section suggests), with the same server on the
// 2026-07-28 revision beside it (modern.ts); or stdio inside a sandbox. The connection itself is
// connection.ts. Every failure is a McpClientError (see errors.ts).
import { SSEClientTransport } from '@modelcontextprotocol/sdk/client/sse.js';
import {
  StreamableHTTPClientTransport,
  StreamableHTTPError,
} from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { pino } from 'pino';
import type { Sandbox } from '@toolmesh/sandbox';
import { McpClientError } from './errors.ts';
import { openConnection, type ConnectOptions, type McpConnection } from './connection.ts';
import { createModernChannel } from './modern.ts';
import { createSandboxStdioTransport } from './sandbox-transport.ts';

export type McpEndpoint =
  | {
      readonly transport: 'http';
      readonly url: string;
      /** Sent on every request (auth headers already resolved from secrets by the caller). */
      readonly headers?: Readonly<Record<string, string>>;
      /** Try the HTTP+SSE transport when streamable HTTP is refused (default true). */
      readonly sseFallback?: boolean;
      /** The fetch every request goes through (an egress-checking one in the tools service). */
      readonly fetch?: FetchLike;
    }
  | {
      readonly transport: 'stdio';
      /** The sandbox session the server runs in. */
      readonly sandbox: Sandbox;
      readonly command: string;
      readonly args?: readonly string[];
      readonly env?: Readonly<Record<string, string>>;
    };

const DEFAULT_CONNECT_MS = 30_000;

export async function connectMcp(
  endpoint: McpEndpoint,
  options: ConnectOptions = {},
): Promise<McpConnection> {
  const log = (options.logger ?? pino({ level: 'silent' })).child({ component: 'mcp' });
  const timeout = options.timeoutMs ?? DEFAULT_CONNECT_MS;
  if (endpoint.transport === 'stdio') {
    const transport = createSandboxStdioTransport({
      sandbox: endpoint.sandbox,
      command: endpoint.command,
      ...(endpoint.args ? { args: endpoint.args } : {}),
      ...(endpoint.env ? { env: endpoint.env } : {}),
    });
    return openConnection('stdio', transport, options, timeout, log);
  }
  let url: URL;
  try {
    url = new URL(endpoint.url);
  } catch (err) {
    throw new McpClientError('connect_failed', `${endpoint.url} is not a URL`, { cause: err });
  }
  const requestInit: RequestInit = endpoint.headers ? { headers: { ...endpoint.headers } } : {};
  const fetchOpt = endpoint.fetch ? { fetch: endpoint.fetch } : {};
  try {
    const conn = await openConnection(
      'streamable_http',
      new StreamableHTTPClientTransport(url, { requestInit, ...fetchOpt }),
      options,
      timeout,
      log,
    );
    // The same server on the 2026-07-28 revision, for what a 2026 client asks (modern.ts).
    return Object.assign(conn, {
      modern: createModernChannel({
        url,
        ...(endpoint.headers ? { headers: endpoint.headers } : {}),
        ...fetchOpt,
      }),
    });
  } catch (err) {
    const status = httpStatusOf(err);
    const fallback =
      endpoint.sseFallback !== false &&
      status !== undefined &&
      status >= 400 &&
      status < 500 &&
      status !== 401 &&
      status !== 403;
    if (!fallback) throw err;
    log.debug({ url: url.origin, status }, 'streamable HTTP refused; trying HTTP+SSE');
    return openConnection(
      'sse',
      new SSEClientTransport(url, {
        requestInit,
        ...fetchOpt,
        // The SSE GET takes its headers from eventSourceInit's fetch, not from requestInit.
        eventSourceInit: {
          fetch: (u, init) =>
            (endpoint.fetch ?? fetch)(u, {
              ...init,
              headers: { ...(init?.headers as Record<string, string>), ...endpoint.headers },
            }),
        },
      }),
      options,
      timeout,
      log,
    );
  }
}

function httpStatusOf(err: unknown): number | undefined {
  const cause = err instanceof McpClientError ? err.cause : err;
  if (cause instanceof StreamableHTTPError && typeof cause.code === 'number') return cause.code;
  return undefined;
}
