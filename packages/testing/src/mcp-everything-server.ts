// The everything fixture server over streamable HTTP, in the test's process on a local port:
// stateful sessions (one McpServer each, mcp-everything-features.ts), resumable SSE streams
// (an in-memory event store, a retry interval: SEP-1699), and the DNS rebinding check a
// localhost server owes (a Host or Origin that is not loopback is 403). What the conformance
// suite's server scenarios test, run directly and through the mesh.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Readable } from 'node:stream';
import type { ReadableStream as WebReadableStream } from 'node:stream/web';
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import {
  StreamableHTTPServerTransport,
  type EventStore,
} from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import type { JSONRPCMessage } from '@modelcontextprotocol/sdk/types.js';
import { isLegacyRequest } from '@modelcontextprotocol/server';
import { createEverythingServer, type EverythingState } from './mcp-everything-features.ts';
import { createEverythingTriggers, type EverythingTriggers } from './mcp-everything-triggers.ts';
import { createModernEverything } from './mcp-everything-modern.ts';
import { createFixtureTasks } from './mcp-everything-tasks.ts';

export interface McpEverythingFixture {
  readonly url: string;
  readonly state: EverythingState;
  /** The JSON-RPC methods POSTed, in order. */
  readonly methods: string[];
  /** Those of them POSTed on the 2026-07-28 revision (stateless). */
  readonly modernMethods: string[];
  /** Makes every session notify its client (mcp-everything-triggers.ts). */
  readonly triggers: EverythingTriggers;
  stop(): Promise<void>;
}

interface Session {
  server: McpServer;
  transport: StreamableHTTPServerTransport;
}

const LOOPBACK = new Set(['localhost', '127.0.0.1', '[::1]']);

function isLoopback(value: string | undefined, withScheme: boolean): boolean {
  if (value === undefined) return true;
  try {
    return LOOPBACK.has(new URL(withScheme ? value : `http://${value}`).hostname);
  } catch {
    return false;
  }
}

function eventStore(): EventStore {
  const events: { id: string; stream: string; message: JSONRPCMessage }[] = [];
  let n = 0;
  return {
    storeEvent: (stream, message) => {
      const id = `${stream}::${String(++n).padStart(8, '0')}`;
      events.push({ id, stream, message });
      return Promise.resolve(id);
    },
    replayEventsAfter: async (last, { send }) => {
      const stream = last.split('::')[0] ?? '';
      for (const e of events) {
        if (e.stream === stream && e.id > last && Object.keys(e.message).length > 0) {
          await send(e.id, e.message);
        }
      }
      return stream;
    },
  };
}

function toWebRequest(req: IncomingMessage): Request {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    for (const v of Array.isArray(value) ? value : value === undefined ? [] : [value]) {
      headers.append(name, v);
    }
  }
  return new Request(`http://${req.headers.host ?? 'localhost'}${req.url ?? '/'}`, {
    method: req.method ?? 'POST',
    headers,
  });
}

async function sendWeb(res: ServerResponse, web: Response): Promise<void> {
  res.writeHead(web.status, Object.fromEntries(web.headers));
  if (!web.body) return void res.end();
  const body = Readable.fromWeb(web.body as WebReadableStream<Uint8Array>);
  res.once('close', () => body.destroy());
  await new Promise<void>((resolve) => {
    body.once('close', resolve);
    body.once('error', () => resolve());
    body.pipe(res);
  });
}

export async function startMcpEverythingServer(
  o: {
    port?: number;
    /** false: a server of the 2025 revisions only (a 2026-07-28 request is refused, 400). */
    modern?: boolean;
  } = {},
): Promise<McpEverythingFixture> {
  const sessions = new Map<string, Session>();
  const methods: string[] = [];
  const modernMethods: string[] = [];
  const state: EverythingState = {
    subscriptions: new Set(),
    closeStream: (sessionId, requestId) => {
      if (sessionId) sessions.get(sessionId)?.transport.closeSSEStream(requestId);
    },
  };

  const extras = createEverythingTriggers(() => [...sessions.values()].map((s) => s.server), state);

  const tasks = createFixtureTasks();
  const modern = createModernEverything(state, tasks);
  const refuse = (res: ServerResponse, status: number, code: number, message: string) => {
    res.writeHead(status, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }));
  };

  async function handle(req: IncomingMessage, res: ServerResponse) {
    const origin = req.headers.origin;
    if (!isLoopback(req.headers.host, false) || !isLoopback(origin, true)) {
      return refuse(res, 403, -32000, 'Forbidden: the Host or Origin is not allowed');
    }
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    let body: unknown;
    try {
      body = text === '' ? undefined : JSON.parse(text);
    } catch {
      return refuse(res, 400, -32700, 'Parse error');
    }
    if (typeof body === 'object' && body !== null && 'method' in body) {
      methods.push(String(body.method));
    }
    const id = req.headers['mcp-session-id'];
    if (req.method === 'POST' && id === undefined && o.modern !== false) {
      const web = toWebRequest(req);
      // 2026-07-28: stateless, one server per request (mcp-everything-modern.ts).
      if (!(await isLegacyRequest(web, body))) {
        modernMethods.push(String((body as { method?: unknown }).method));
        return sendWeb(res, await modern.fetch(web, { parsedBody: body }));
      }
    }
    if (typeof id === 'string') {
      const known = sessions.get(id);
      if (!known) return refuse(res, 404, -32001, 'Session not found');
      return known.transport.handleRequest(req, res, body);
    }
    if (req.method !== 'POST') return refuse(res, 400, -32000, 'Invalid or missing session ID');
    const server = createEverythingServer(state);
    extras.apply(server);
    const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      eventStore: eventStore(),
      retryInterval: 1_000,
      onsessioninitialized: (sid) => {
        sessions.set(sid, { server, transport });
      },
    });
    transport.onclose = () => {
      if (transport.sessionId) sessions.delete(transport.sessionId);
    };
    await server.connect(transport);
    await transport.handleRequest(req, res, body);
  }

  const http: Server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) res.writeHead(500);
      res.end(String(err));
    });
  });
  await new Promise<void>((resolve) => http.listen(o.port ?? 0, '127.0.0.1', resolve));
  const port = (http.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    state,
    methods,
    modernMethods,
    triggers: extras.triggers,
    async stop() {
      tasks.stop();
      await modern.close();
      await Promise.all([...sessions.values()].map((s) => s.server.close().catch(() => undefined)));
      sessions.clear();
      http.closeAllConnections();
      await new Promise<void>((resolve) => http.close(() => resolve()));
    },
  };
}
