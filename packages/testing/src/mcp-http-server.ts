// A streamable-HTTP MCP server built with the official SDK, in the test's own process on a
// local port: one McpServer per session (stateful, so notifications/cancelled reaches the call
// it names), the fixture tools, a tool set that can change while sessions are open (for
// refresh), and a switch that drops every connection (a server dying mid-call).
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer, type RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { SSEServerTransport } from '@modelcontextprotocol/sdk/server/sse.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema, type Tool } from '@modelcontextprotocol/sdk/types.js';
import { FIXTURE_TOOLS, registerFixtureTools, type FixtureState } from './mcp-fixture-tools.ts';

export interface McpHttpFixture {
  readonly url: string;
  readonly state: FixtureState;
  /** Headers of every HTTP request received (to check auth). */
  readonly requestHeaders: Record<string, string | string[] | undefined>[];
  /** The JSON-RPC method of every request POSTed, in order (`tools/list`, `tools/call`...). */
  readonly methods: string[];
  /** Serves exactly these tools from now on, in every open session too. */
  setTools(names: readonly string[]): void;
  /** Lists a tool with this description from now on, in every open session too (a "rug pull"). */
  setDescription(name: string, description: string): void;
  /** Ends every open connection and forgets every session (a crash and restart). */
  dropConnections(): Promise<void>;
  stop(): Promise<void>;
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
  tools: Map<string, RegisteredTool>;
}

export async function startMcpHttpServer(
  options: {
    tools?: readonly string[];
    port?: number;
    /** Speak only the older HTTP+SSE transport (GET /mcp, POST /messages): no streamable HTTP. */
    sseOnly?: boolean;
    /** Send notifications/tools/list_changed when setTools changes the set (default true). */
    announce?: boolean;
    /** Answer tools/list in pages of this many tools (with `nextCursor`). Default: one page. */
    pageSize?: number;
    /** Told each POSTed JSON-RPC method as its body is read (a benchmark's timeline). */
    onRequest?: (method: string) => void;
  } = {},
): Promise<McpHttpFixture> {
  const state: FixtureState = { canceled: 0 };
  let names: readonly string[] = options.tools ?? FIXTURE_TOOLS;
  const sessions = new Map<string, Session>();
  const requestHeaders: McpHttpFixture['requestHeaders'] = [];
  const methods: string[] = [];
  const descriptions = new Map<string, string>();
  const describeAll = (tools: Map<string, RegisteredTool>) => {
    for (const [name, description] of descriptions) tools.get(name)?.update({ description });
  };

  async function newSession(): Promise<Session> {
    const server = new McpServer({ name: 'toolmesh-fixture-http', version: '1.0.0' });
    if (options.announce === false) server.sendToolListChanged = () => undefined;
    const tools = registerFixtureTools(server, state, names);
    describeAll(tools);
    if (options.pageSize !== undefined) paginate(server, options.pageSize);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (id) => {
        sessions.set(id, session);
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    const session: Session = { server, transport, tools };
    await server.connect(transport);
    return session;
  }

  const sse = new Map<string, SSEServerTransport>();
  const handleSse = async (req: IncomingMessage, res: ServerResponse, body: unknown) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (req.method === 'GET' && url.pathname === '/mcp') {
      const server = new McpServer({ name: 'toolmesh-fixture-sse', version: '1.0.0' });
      registerFixtureTools(server, state, names);
      const transport = new SSEServerTransport('/messages', res);
      sse.set(transport.sessionId, transport);
      transport.onclose = () => sse.delete(transport.sessionId);
      await server.connect(transport);
      return;
    }
    const transport = sse.get(url.searchParams.get('sessionId') ?? '');
    if (req.method === 'POST' && url.pathname === '/messages' && transport) {
      await transport.handlePostMessage(req, res, body);
      return;
    }
    // What an SSE-only server answers a streamable-HTTP POST: the client then falls back.
    res.writeHead(405, { allow: 'GET' }).end();
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    requestHeaders.push({ ...req.headers });
    if (options.sseOnly && req.method === 'GET') return handleSse(req, res, undefined);
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const body: unknown = text === '' ? undefined : JSON.parse(text);
    if (typeof body === 'object' && body !== null && 'method' in body) {
      methods.push(String(body.method));
      options.onRequest?.(String(body.method));
    }
    if (options.sseOnly) return handleSse(req, res, body);
    const id = req.headers['mcp-session-id'];
    const known = typeof id === 'string' ? sessions.get(id) : undefined;
    if (known) return known.transport.handleRequest(req, res, body);
    if (typeof id === 'string') {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          jsonrpc: '2.0',
          error: { code: -32001, message: 'Session not found' },
          id: null,
        }),
      );
      return;
    }
    const session = await newSession();
    return session.transport.handleRequest(req, res, body);
  };

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(options.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;

  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    requestHeaders,
    methods,
    setTools(next) {
      names = next;
      for (const s of sessions.values()) {
        for (const [name, tool] of s.tools) {
          if (!next.includes(name)) {
            tool.remove();
            s.tools.delete(name);
          }
        }
        const added = registerFixtureTools(
          s.server,
          state,
          next.filter((n) => !s.tools.has(n)),
        );
        for (const [name, tool] of added) s.tools.set(name, tool);
      }
    },
    setDescription(name, description) {
      descriptions.set(name, description);
      for (const s of sessions.values()) describeAll(s.tools);
    },
    async dropConnections() {
      const all = [...sessions.values()];
      sessions.clear();
      http.closeAllConnections();
      await Promise.all(all.map((s) => s.server.close().catch(() => undefined)));
    },
    async stop() {
      await Promise.all([...sessions.values()].map((s) => s.server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}

type RawHandler = (request: unknown, extra: unknown) => Promise<{ tools: unknown[] }>;

/** Replaces McpServer's tools/list (one page) by pages of `size`, the cursor an offset. */
function paginate(server: McpServer, size: number): void {
  // McpServer offers no paging; its own handler is taken from the protocol's handler map.
  const handlers = (server.server as unknown as { _requestHandlers: Map<string, RawHandler> })
    ._requestHandlers;
  const all = handlers.get('tools/list')!;
  server.server.setRequestHandler(ListToolsRequestSchema, async (req, extra) => {
    const { tools } = await all({ method: 'tools/list', params: {} }, extra);
    const from = Number(req.params?.cursor ?? 0);
    const next = from + size;
    return {
      tools: tools.slice(from, next) as Tool[],
      ...(next < tools.length ? { nextCursor: String(next) } : {}),
    };
  });
}

/** Absolute path of the stdio fixture server (run it with `node <path>` inside a sandbox). */
export const MCP_STDIO_SERVER_PATH = new URL('./mcp-stdio-server.ts', import.meta.url).pathname;
