// The 2026-07-28 revision to an HTTP MCP server, beside the connection's 2025 session: one
// stateless POST per request, its protocol version and the client's capabilities in `_meta` and
// the standard headers (MCP-Protocol-Version, Mcp-Method, Mcp-Name, and an Mcp-Param-* header
// for each argument its tool's schema marks `x-mcp-header`, SEP-2243). Used for what a 2026
// client asks through the mesh, so that the server sees that client's revision and
// capabilities and may answer `input_required` (SEP-2322): the answer comes back as sent. The
// same URL, headers and fetch (auth, egress rules) as the session's. Whether the server speaks
// the revision at all is asked once (server/discover) and remembered.
import type { FetchLike } from '@modelcontextprotocol/sdk/shared/transport.js';
import { McpClientError } from './errors.ts';

export const MODERN_PROTOCOL_VERSION = '2026-07-28';
const VERSION_META = 'io.modelcontextprotocol/protocolVersion';
const CAPABILITIES_META = 'io.modelcontextprotocol/clientCapabilities';
const CLIENT_INFO_META = 'io.modelcontextprotocol/clientInfo';

export interface ModernRequestOptions {
  readonly signal?: AbortSignal;
  /** The capabilities of the client the request comes from, as it declared them. */
  readonly clientCapabilities: Record<string, unknown>;
  /** The tool's input schema (tools/call): its `x-mcp-header` arguments become headers. */
  readonly inputSchema?: Record<string, unknown>;
  /**
   * The Mcp-Param-* headers the client sent, passed on as sent instead of made from the
   * arguments: the server checks them (a missing or mismatched one is the client's to hear of).
   */
  readonly paramHeaders?: Readonly<Record<string, string>>;
  /** Each notification the server sends on the request's stream (progress, log messages). */
  readonly onNotification?: (method: string, params: Record<string, unknown>) => void;
}

export type ModernReply =
  | { result: Record<string, unknown> }
  | { error: { code: number; message: string; data?: unknown } };

export interface ModernChannel {
  /** Does the server speak 2026-07-28 (asked once; a failure to answer means no)? */
  supported(signal?: AbortSignal): Promise<boolean>;
  request(
    method: string,
    params: Record<string, unknown>,
    options: ModernRequestOptions,
  ): Promise<ModernReply>;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** A header value as sent: printable ASCII as is, anything else Base64 (SEP-2243). */
function headerValue(value: string): string {
  return /^[\x21-\x7e]([\x20-\x7e]*[\x21-\x7e])?$/.test(value)
    ? value
    : `=?base64?${Buffer.from(value, 'utf8').toString('base64')}?=`;
}

function nameOf(method: string, params: Record<string, unknown>): string | undefined {
  const v =
    method === 'resources/read'
      ? params['uri']
      : method === 'tools/call' || method === 'prompts/get'
        ? params['name']
        : method === 'tasks/get' || method === 'tasks/update' || method === 'tasks/cancel'
          ? params['taskId']
          : undefined;
  return typeof v === 'string' ? v : undefined;
}

/** The Mcp-Param-* headers of a call: top-level arguments whose property names a header. */
function paramHeaders(
  schema: Record<string, unknown> | undefined,
  args: unknown,
): Record<string, string> {
  const out: Record<string, string> = {};
  const props = schema?.['properties'];
  if (!isRecord(props) || !isRecord(args)) return out;
  for (const [key, prop] of Object.entries(props)) {
    const header = isRecord(prop) ? prop['x-mcp-header'] : undefined;
    const value = args[key];
    if (typeof header !== 'string') continue;
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      continue;
    }
    out[`Mcp-Param-${header}`] = headerValue(String(value));
  }
  return out;
}

/** The JSON-RPC response of a request: the body as JSON, or the one with the id on an SSE stream. */
async function readReply(
  res: Response,
  id: number,
  onNotification: ModernRequestOptions['onNotification'],
): Promise<ModernReply> {
  const type = res.headers.get('content-type') ?? '';
  const answer = (msg: unknown): ModernReply | undefined => {
    if (!isRecord(msg)) return undefined;
    if (typeof msg['method'] === 'string' && msg['id'] === undefined) {
      onNotification?.(msg['method'], isRecord(msg['params']) ? msg['params'] : {});
      return undefined;
    }
    if (msg['id'] !== id) return undefined;
    const err = msg['error'];
    if (isRecord(err) && typeof err['code'] === 'number') {
      return {
        error: {
          code: err['code'],
          message: typeof err['message'] === 'string' ? err['message'] : '',
          ...(err['data'] === undefined ? {} : { data: err['data'] }),
        },
      };
    }
    return isRecord(msg['result']) ? { result: msg['result'] } : undefined;
  };
  if (type.startsWith('text/event-stream') && res.body) {
    const decoder = new TextDecoder();
    let buffer = '';
    for await (const chunk of res.body as unknown as AsyncIterable<Uint8Array>) {
      buffer += decoder.decode(chunk, { stream: true });
      let end: number;
      while ((end = buffer.search(/\r?\n\r?\n/)) >= 0) {
        const event = buffer.slice(0, end);
        buffer = buffer.slice(end).replace(/^\r?\n\r?\n/, '');
        const data = event
          .split(/\r?\n/)
          .filter((l) => l.startsWith('data:'))
          .map((l) => l.slice(5).trimStart())
          .join('\n');
        if (data === '') continue;
        let msg: unknown;
        try {
          msg = JSON.parse(data);
        } catch {
          continue;
        }
        const done = answer(msg);
        if (done) return done;
      }
    }
    throw new McpClientError('rpc_error', 'the server ended its event stream without a response');
  }
  const text = await res.text();
  let msg: unknown;
  try {
    msg = JSON.parse(text);
  } catch {
    throw new McpClientError(
      'rpc_error',
      `the server answered HTTP ${res.status} without a JSON-RPC response`,
    );
  }
  const done = answer(msg);
  if (!done) {
    throw new McpClientError('rpc_error', `the server answered HTTP ${res.status} with no result`);
  }
  return done;
}

export function createModernChannel(endpoint: {
  url: URL;
  headers?: Readonly<Record<string, string>>;
  fetch?: FetchLike;
}): ModernChannel {
  const doFetch = endpoint.fetch ?? fetch;
  let nextId = 0;
  let speaks: Promise<boolean> | undefined;

  async function request(
    method: string,
    params: Record<string, unknown>,
    o: ModernRequestOptions,
  ): Promise<ModernReply> {
    const id = ++nextId;
    const meta = isRecord(params['_meta']) ? params['_meta'] : {};
    const body = {
      jsonrpc: '2.0',
      id,
      method,
      params: {
        ...params,
        _meta: {
          ...meta,
          [VERSION_META]: MODERN_PROTOCOL_VERSION,
          [CAPABILITIES_META]: o.clientCapabilities,
          [CLIENT_INFO_META]: { name: 'toolmesh', version: '1' },
        },
      },
    };
    const name = nameOf(method, params);
    const res = await doFetch(endpoint.url, {
      method: 'POST',
      headers: {
        ...endpoint.headers,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': MODERN_PROTOCOL_VERSION,
        'mcp-method': method,
        ...(name === undefined ? {} : { 'mcp-name': headerValue(name) }),
        ...(method !== 'tools/call'
          ? {}
          : (o.paramHeaders ?? paramHeaders(o.inputSchema, params['arguments']))),
      },
      body: JSON.stringify(body),
      ...(o.signal ? { signal: o.signal } : {}),
    });
    return readReply(res, id, o.onNotification);
  }

  return {
    supported(signal) {
      speaks ??= request(
        'server/discover',
        {},
        { clientCapabilities: {}, ...(signal ? { signal } : {}) },
      )
        .then((r) => {
          const versions = 'result' in r ? r.result['supportedVersions'] : undefined;
          return Array.isArray(versions) && versions.includes(MODERN_PROTOCOL_VERSION);
        })
        .catch(() => false);
      return speaks;
    },
    request,
  };
}
