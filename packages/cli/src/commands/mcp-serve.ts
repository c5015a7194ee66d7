// `toolmesh mcp serve --project p [--agent a] [--server s]`: the project (or, with --server, one
// of its MCP servers under that server's own names) as an MCP server on stdio, for MCP clients
// that start a command. It relays each JSON-RPC message between stdio and the api's
// streamable HTTP endpoint (/v1/projects/:p/mcp) with the CLI's key, so both transports are
// answered by the one translation module in the api, with the same auth, idempotency and
// tool sets; the CLI holds no database or NATS connection of its own. stdout carries only
// protocol messages; diagnostics go to stderr.
import { StdioServerTransport } from '@modelcontextprotocol/sdk/server/stdio.js';
// The 2.x client transport: it also frames 2026-07-28 requests (headers derived from the body).
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  ErrorCode,
  isJSONRPCRequest,
  isJSONRPCResultResponse,
  type JSONRPCMessage,
  type RequestId,
} from '@modelcontextprotocol/sdk/types.js';
import type { Context } from '../context.ts';
import { ExitCode, usageError } from '../exit.ts';
import { projectOf } from '../settings.ts';

export interface McpServeFlags {
  agent?: string;
  /** One MCP server of the project: /v1/projects/:p/mcp-servers/:name/mcp. */
  server?: string;
}

export async function mcpServe(ctx: Context, f: McpServeFlags): Promise<number> {
  const { settings, io } = ctx;
  const project = projectOf(settings);
  if (!settings.apiKey) throw usageError('no api key: pass --api-key or set TOOLMESH_API_KEY');
  if (!io.stdin) throw usageError('mcp serve needs a standard input');
  const base = `${settings.apiUrl}/v1/projects/${encodeURIComponent(project)}`;
  const url = new URL(
    f.server ? `${base}/mcp-servers/${encodeURIComponent(f.server)}/mcp` : `${base}/mcp`,
  );
  if (f.agent) url.searchParams.set('agent', f.agent);

  const upstream = new StreamableHTTPClientTransport(url, {
    requestInit: { headers: { authorization: `Bearer ${settings.apiKey}` } },
  });
  const local = new StdioServerTransport(io.stdin, io.stdout);
  const warn = (what: string, err: unknown) =>
    io.stderr.write(`toolmesh mcp serve: ${what}: ${(err as Error).message ?? String(err)}\n`);
  // The negotiated revision goes in a header of every later request: learnt from the answer.
  const initializing = new Set<RequestId>();

  let finish: () => void = () => undefined;
  const done = new Promise<void>((resolve) => (finish = resolve));
  io.stdin.once('end', () => finish());
  ctx.signal.addEventListener('abort', () => finish(), { once: true });
  local.onclose = () => finish();

  local.onmessage = (msg: JSONRPCMessage) => {
    if (isJSONRPCRequest(msg) && msg.method === 'initialize') initializing.add(msg.id);
    upstream.send(msg as never).catch((err: unknown) => {
      // A request must be answered even when the api could not be reached or refused the key.
      if (isJSONRPCRequest(msg)) {
        const message = `toolmesh api: ${(err as Error).message ?? String(err)}`;
        local
          .send({ jsonrpc: '2.0', id: msg.id, error: { code: ErrorCode.InternalError, message } })
          .catch((e: unknown) => warn('writing to stdout failed', e));
      } else {
        warn('relaying a notification failed', err);
      }
    });
  };
  upstream.onmessage = (msg) => {
    if (isJSONRPCResultResponse(msg) && initializing.delete(msg.id)) {
      const version = (msg.result as { protocolVersion?: unknown }).protocolVersion;
      if (typeof version === 'string') upstream.setProtocolVersion(version);
    }
    local.send(msg).catch((e: unknown) => warn('writing to stdout failed', e));
  };
  upstream.onerror = (err) => warn('api stream', err);

  await upstream.start();
  await local.start();
  await done;
  // Ends the session on the api (DELETE); a session it already dropped is not an error here.
  await upstream.terminateSession().catch(() => undefined);
  await upstream.close();
  await local.close();
  return ExitCode.ok;
}
