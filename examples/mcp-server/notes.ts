// An example MCP server to bring to a project (docs/mcp.md): a notebook kept in memory, served
// over streamable HTTP on 127.0.0.1, with two tools, `add` and `search`. With --token (or
// NOTES_TOKEN) it answers only requests that carry `Authorization: Bearer <token>`.
//
//   node examples/mcp-server/notes.ts [--port 3100] [--token <token>]
//
// It prints its URL once it listens. Stateless: every request gets a server of its own, over
// the one notebook.
import { timingSafeEqual } from 'node:crypto';
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { parseArgs } from 'node:util';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { z } from 'zod';

const { values } = parseArgs({
  options: { port: { type: 'string', default: '3100' }, token: { type: 'string' } },
});
const token = values.token ?? process.env['NOTES_TOKEN'] ?? '';
const notes: { id: number; text: string }[] = [];

function notesServer(): McpServer {
  const server = new McpServer({ name: 'notes', version: '1.0.0' });
  server.registerTool(
    'add',
    {
      description: 'Adds a note to the notebook',
      inputSchema: { text: z.string().min(1).describe('the note') },
      outputSchema: { id: z.number() },
    },
    ({ text }) => {
      const id = notes.length + 1;
      notes.push({ id, text });
      return { content: [{ type: 'text', text: `note ${id} added` }], structuredContent: { id } };
    },
  );
  server.registerTool(
    'search',
    {
      description: 'The notes that contain a word (case-insensitive)',
      inputSchema: { query: z.string().describe('a word') },
      outputSchema: { notes: z.array(z.object({ id: z.number(), text: z.string() })) },
      annotations: { readOnlyHint: true },
    },
    ({ query }) => {
      const found = notes.filter((n) => n.text.toLowerCase().includes(query.toLowerCase()));
      return {
        content: [{ type: 'text', text: found.map((n) => `${n.id}: ${n.text}`).join('\n') }],
        structuredContent: { notes: found },
      };
    },
  );
  return server;
}

function authorized(req: IncomingMessage): boolean {
  if (token === '') return true;
  const given = Buffer.from(req.headers.authorization ?? '');
  const expected = Buffer.from(`Bearer ${token}`);
  return given.length === expected.length && timingSafeEqual(given, expected);
}

const http = createServer((req, res) => {
  if (new URL(req.url ?? '/', 'http://localhost').pathname !== '/mcp') {
    res.writeHead(404).end();
    return;
  }
  if (!authorized(req)) {
    res.writeHead(401, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: 'a bearer token is required' }));
    return;
  }
  const server = notesServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
  res.on('close', () => void server.close());
  server
    .connect(transport)
    .then(() => transport.handleRequest(req, res))
    .catch((err: unknown) => {
      process.stderr.write(`notes: ${(err as Error).message}\n`);
      if (!res.headersSent) res.writeHead(500).end();
    });
});
http.on('error', (err: NodeJS.ErrnoException) => {
  const hint = err.code === 'EADDRINUSE' ? ': the port is taken; pass --port <another>' : '';
  process.stderr.write(`notes: ${err.message}${hint}\n`);
  process.exit(1);
});
http.listen(Number(values.port), '127.0.0.1', () => {
  const { port } = http.address() as AddressInfo;
  process.stdout.write(`notes MCP server on http://127.0.0.1:${port}/mcp\n`);
});
