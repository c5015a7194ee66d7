// One open MCP connection: the SDK's Client wrapped in the small surface callers get (list
// every tool, call a tool with progress, log messages, questions and an AbortSignal, pass other
// requests through, learn when the connection dies), whatever transport carries it (connect.ts
// picks one). Every failure is a McpClientError (see errors.ts).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { SseError } from '@modelcontextprotocol/sdk/client/sse.js';
import type { Transport } from '@modelcontextprotocol/sdk/shared/transport.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  ErrorCode,
  McpError,
  ResultSchema,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Tool,
} from '@modelcontextprotocol/sdk/types.js';
import type { Logger } from 'pino';
import { messageWithCause } from '@toolmesh/protocol';
import { McpClientError, mapRequestError } from './errors.ts';
import type { ModernChannel } from './modern.ts';
import { orderedTransport } from './ordered.ts';
import { describeEnd, stderrNote, withExit } from './process-end.ts';

export const McpTransportKind = {
  streamable_http: 'streamable_http',
  sse: 'sse',
  stdio: 'stdio',
} as const;
export type McpTransportKind = (typeof McpTransportKind)[keyof typeof McpTransportKind];

export interface ConnectOptions {
  /** Bounds the handshake (and, for stdio, the server's start). */
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  readonly logger?: Logger;
  readonly clientName?: string;
  /** Called on each notifications/tools/list_changed the server sends. */
  readonly onToolsChanged?: () => void;
  /**
   * Called on every other notification the server sends (resource updates, list changes, log
   * messages sent while no call with an `onLog` runs).
   */
  readonly onNotification?: (n: McpNotification) => void;
}

/** A notification of the server, as sent. */
export interface McpNotification {
  readonly method: string;
  readonly params?: Record<string, unknown>;
}

/** What answers a server's request to the client during a call. */
export type McpAsker = (
  method: 'sampling/createMessage' | 'elicitation/create',
  params: Record<string, unknown>,
  signal: AbortSignal,
) => Promise<Record<string, unknown>>;

/** A JSON-RPC error the server answered a passed-through request with. */
export interface McpRpcError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** A tool as the server lists it (name, description, input schema, annotations...). */
export type McpTool = Tool;

export interface McpProgress {
  readonly progress: number;
  readonly total?: number;
  readonly message?: string;
}

export interface CallOptions {
  readonly signal?: AbortSignal;
  /** Each notifications/progress of this call. */
  readonly onProgress?: (p: McpProgress) => void;
  /**
   * Each log message (notifications/message) the server sends while this call runs: the SDK
   * does not say which request a notification belongs to, so every call in flight on the
   * connection hears it.
   */
  readonly onLog?: (params: Record<string, unknown>) => void;
  /**
   * Answers what the server asks the client while this call runs (sampling/createMessage,
   * elicitation/create): the result to send back, or a thrown error with `code`. Asked only
   * when this is the one call in flight on the connection that can answer.
   */
  readonly onAsk?: McpAsker;
  /** The SDK's own request timeout; the caller's deadline (via `signal`) usually ends it first. */
  readonly timeoutMs?: number;
}

export interface McpCallResult {
  readonly content: CallToolResult['content'];
  readonly structuredContent?: Record<string, unknown>;
}

export interface McpConnection {
  readonly transport: McpTransportKind;
  readonly serverInfo: { name: string; version: string } | undefined;
  /** True once the connection died or was closed: make a new one. */
  readonly closed: boolean;
  /** Every tool the server lists, following `nextCursor` through all pages. */
  listTools(options?: { signal?: AbortSignal }): Promise<McpTool[]>;
  /** Calls a tool; `isError: true` rejects with reason `tool_error` and the content in details. */
  callTool(
    name: string,
    args: Record<string, unknown>,
    options?: CallOptions,
  ): Promise<McpCallResult>;
  /**
   * One request passed through as is (resources, prompts, completion, logging): the server's
   * result, or its JSON-RPC error as `{error}`; a failure of the connection throws.
   */
  request(
    method: string,
    params: Record<string, unknown>,
    options?: { signal?: AbortSignal; timeoutMs?: number },
  ): Promise<{ result: Record<string, unknown> } | { error: McpRpcError }>;
  /** The server over streamable HTTP on the 2026-07-28 revision (stateless requests). */
  readonly modern?: ModernChannel;
  /** Runs `fn` once when the connection ends, however it ends. */
  onClose(fn: (why: string) => void): void;
  close(): Promise<void>;
}

/** The SDK's request timeout when the caller gives none: the caller's signal ends calls. */
const NO_SDK_TIMEOUT_MS = 24 * 3600 * 1000;
/** Pages of tools/list followed before giving up on a server that never ends its cursor. */
const MAX_PAGES = 100;
export async function openConnection(
  kind: McpTransportKind,
  transport: Transport,
  options: ConnectOptions,
  timeoutMs: number,
  log: Logger,
): Promise<McpConnection> {
  // Sampling and elicitation are declared: what a server asks during a call goes to that
  // call's caller (onAsk), who may be an MCP client of the facade.
  const client = new Client(
    { name: options.clientName ?? 'toolmesh', version: '1.0.0' },
    { capabilities: { sampling: {}, elicitation: { form: {} } } },
  );
  const askers = new Set<McpAsker>();
  const ask =
    (method: Parameters<McpAsker>[0]) =>
    async (req: { params: Record<string, unknown> }, extra: { signal: AbortSignal }) => {
      // The SDK does not say which request a server's request belongs to: with one call in
      // flight that can answer it is that call's; with several, nobody can tell.
      if (askers.size !== 1) {
        throw new McpError(
          ErrorCode.InternalError,
          askers.size === 0
            ? `${method}: no caller of this server's calls can answer it`
            : `${method}: several calls of this server are in flight; the mesh cannot tell which one asks`,
        );
      }
      const [only] = askers;
      return (await only!(method, req.params, extra.signal)) as never;
    };
  client.setRequestHandler(CreateMessageRequestSchema, ask('sampling/createMessage'));
  client.setRequestHandler(ElicitRequestSchema, ask('elicitation/create'));
  let closedWhy: string | undefined;
  let brokenBy: string | undefined;
  const closeListeners: ((why: string) => void)[] = [];
  const end = (why: string) => {
    if (closedWhy !== undefined) return;
    closedWhy = why;
    for (const fn of closeListeners.splice(0)) fn(why);
  };
  client.onclose = () =>
    end(brokenBy ? `the ${kind} stream broke: ${brokenBy}` : describeEnd(kind, transport));
  client.onerror = (err) => log.debug({ err }, 'MCP transport reported an error');
  const onToolsChanged = options.onToolsChanged;
  if (onToolsChanged) {
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => onToolsChanged());
  }
  const logListeners = new Set<(params: Record<string, unknown>) => void>();
  client.fallbackNotificationHandler = (n) => {
    const params = (n.params ?? {}) as Record<string, unknown>;
    // A log message while calls run is theirs (each call's caller hears it); only one sent
    // outside every call is the connection's.
    if (n.method === 'notifications/message' && logListeners.size > 0) {
      for (const fn of logListeners) fn(params);
      return Promise.resolve();
    }
    options.onNotification?.({ method: n.method, params });
    return Promise.resolve();
  };
  // Notifications ahead of the responses after them (see ordered.ts).
  const wire = orderedTransport(transport);
  // The SDK keeps a request waiting forever when the HTTP stream that should carry its response
  // breaks and the server gave no event ids to resume from: it reports the break and moves on.
  // A broken stream is taken as a dead connection instead: closing the client fails every
  // request still waiting (ConnectionClosed), and the pool opens a new connection next time.
  if (kind !== 'stdio') {
    wire.onerror = (err) => {
      if (closedWhy === undefined && isStreamBreak(kind, err)) {
        log.info({ err, transport: kind }, 'MCP stream broke; closing the connection');
        brokenBy = err.message;
        void client.close();
      }
    };
  }
  try {
    await client.connect(wire, {
      timeout: timeoutMs,
      ...(options.signal ? { signal: options.signal } : {}),
    });
  } catch (err) {
    await client.close().catch(() => undefined);
    const why = kind === 'stdio' ? stderrNote(transport) : '';
    throw new McpClientError(
      'connect_failed',
      `could not connect to the MCP server over ${kind}: ${messageWithCause(err)}${why}`,
      { cause: err, details: { transport: kind } },
    );
  }
  const serverVersion = client.getServerVersion();
  log.debug({ transport: kind, server: serverVersion }, 'MCP connection open');
  return {
    transport: kind,
    serverInfo: serverVersion
      ? { name: serverVersion.name, version: serverVersion.version }
      : undefined,
    get closed() {
      return closedWhy !== undefined;
    },
    async listTools(o = {}) {
      const tools: McpTool[] = [];
      let cursor: string | undefined;
      for (let page = 0; page < MAX_PAGES; page++) {
        let res;
        try {
          res = await client.listTools(cursor === undefined ? {} : { cursor }, {
            ...(o.signal ? { signal: o.signal } : {}),
            timeout: timeoutMs,
          });
        } catch (err) {
          throw withExit(
            mapRequestError(err, 'tools/list', o.signal, closedWhy !== undefined),
            kind,
            transport,
          );
        }
        tools.push(...res.tools);
        cursor = res.nextCursor;
        if (cursor === undefined || cursor === '') return tools;
      }
      throw new McpClientError(
        'rpc_error',
        `tools/list kept returning a cursor after ${MAX_PAGES} pages`,
      );
    },
    async callTool(name, args, o = {}) {
      let res;
      const onLog = o.onLog;
      if (onLog) logListeners.add(onLog);
      const onAsk = o.onAsk;
      if (onAsk) askers.add(onAsk);
      try {
        res = await client.callTool({ name, arguments: args }, undefined, {
          ...(o.signal ? { signal: o.signal } : {}),
          ...(o.onProgress
            ? {
                onprogress: (p: { progress: number; total?: number; message?: string }) =>
                  o.onProgress!({
                    progress: p.progress,
                    ...(p.total === undefined ? {} : { total: p.total }),
                    ...(p.message === undefined ? {} : { message: p.message }),
                  }),
              }
            : {}),
          timeout: o.timeoutMs ?? NO_SDK_TIMEOUT_MS,
        });
      } catch (err) {
        throw withExit(
          mapRequestError(err, `tools/call ${name}`, o.signal, closedWhy !== undefined),
          kind,
          transport,
        );
      } finally {
        if (onLog) logListeners.delete(onLog);
        if (onAsk) askers.delete(onAsk);
      }
      // A 2024-era server may answer with `toolResult` instead of `content`.
      const content = ('content' in res ? res.content : []) as CallToolResult['content'];
      const structured = res.structuredContent as Record<string, unknown> | undefined;
      if (res.isError === true) {
        throw new McpClientError('tool_error', `${name} failed: ${textOf(content) || 'isError'}`, {
          details: { content, ...(structured ? { structured_content: structured } : {}) },
        });
      }
      return { content, ...(structured ? { structuredContent: structured } : {}) };
    },
    async request(method, params, o = {}) {
      try {
        const result = await client.request({ method, params }, ResultSchema, {
          ...(o.signal ? { signal: o.signal } : {}),
          timeout: o.timeoutMs ?? timeoutMs,
        });
        return { result: result };
      } catch (err) {
        // The server's own answer: passed on as is, not a failure of the connection.
        const local = [ErrorCode.ConnectionClosed, ErrorCode.RequestTimeout] as number[];
        if (err instanceof McpError && !local.includes(err.code) && closedWhy === undefined) {
          return {
            error: {
              code: err.code,
              message: err.message.replace(/^MCP error -?\d+: /, ''),
              ...(err.data === undefined ? {} : { data: err.data }),
            },
          };
        }
        throw withExit(
          mapRequestError(err, method, o.signal, closedWhy !== undefined),
          kind,
          transport,
        );
      }
    },
    onClose(fn) {
      if (closedWhy !== undefined) fn(closedWhy);
      else closeListeners.push(fn);
    },
    async close() {
      await client.close().catch(() => undefined);
      end('closed by the client');
    },
  };
}

/** The text parts of a tool result, joined, bounded: a readable error message. */
export function textOf(content: CallToolResult['content']): string {
  return content
    .filter((c): c is { type: 'text'; text: string } => c.type === 'text')
    .map((c) => c.text)
    .join('\n')
    .slice(0, 1000);
}

/** Errors after which a streamable-HTTP or SSE connection cannot be trusted with a request. */
function isStreamBreak(kind: McpTransportKind, err: Error): boolean {
  if (kind === 'sse') return err instanceof SseError;
  return /^(SSE stream disconnected|Maximum reconnection attempts|Failed to reconnect)/.test(
    err.message,
  );
}
