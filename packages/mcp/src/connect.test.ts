// The MCP client layer against real servers built with the official SDK: one over streamable
// HTTP in this process, one over stdio inside a local sandbox (bubblewrap).
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  createE2bSandboxProvider,
  createLocalSandboxProvider,
  type LocalSandboxProvider,
  type Sandbox,
} from '@toolmesh/sandbox';
import {
  bundleMcpStdioServer,
  FIXTURE_TOOLS,
  MCP_STDIO_SERVER_PATH,
  type McpStdioBundle,
  startFakeE2b,
  startMcpHttpServer,
  type McpHttpFixture,
} from '@toolmesh/testing';
import { connectMcp } from './connect.ts';
import type { McpConnection, McpProgress } from './connection.ts';
import { mapToolNames } from './names.ts';

let http: McpHttpFixture;
let root: string;
let provider: LocalSandboxProvider;
let sandbox: Sandbox;
let bundle: McpStdioBundle;

beforeAll(async () => {
  http = await startMcpHttpServer();
  bundle = await bundleMcpStdioServer();
  root = await mkdtemp(join(tmpdir(), 'toolmesh-mcp-test-'));
  // The sandbox cannot read the checkout: the server runs from its bundle's folder.
  provider = await createLocalSandboxProvider({ rootDir: root, allowRead: [bundle.dir] });
  sandbox = await provider.create({ key: { project: 'p', agent: '-', session: 'mcp' } });
});
afterAll(async () => {
  await http?.stop();
  await sandbox?.destroy();
  await provider?.close();
  if (root) await rm(root, { recursive: true, force: true });
  await bundle?.cleanup();
});

const endpoints = {
  http: () => connectMcp({ transport: 'http', url: http.url, headers: { 'x-test': 'yes' } }),
  stdio: () => connectMcp({ transport: 'stdio', sandbox, command: 'node', args: [bundle.file] }),
} as const;

describe.each(['http', 'stdio'] as const)('%s', (kind) => {
  let conn: McpConnection;
  beforeAll(async () => {
    conn = await endpoints[kind]();
  });
  afterAll(async () => {
    await conn?.close();
  });

  it('lists every tool with its schema', async () => {
    expect(conn.transport).toBe(kind === 'http' ? 'streamable_http' : 'stdio');
    const tools = await conn.listTools();
    expect(tools.map((t) => t.name).sort()).toEqual([...FIXTURE_TOOLS].sort());
    const echo = tools.find((t) => t.name === 'echo')!;
    expect(echo.description).toBe('Returns its text');
    expect(echo.inputSchema).toMatchObject({
      type: 'object',
      properties: { text: { type: 'string' } },
      required: ['text'],
    });
  });

  it('calls a tool', async () => {
    const res = await conn.callTool('echo', { text: 'hi' });
    expect(res.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    expect(res.structuredContent).toEqual({ text: 'hi' });
  });

  it('turns isError into a tool_error with the content in details', async () => {
    const err = await conn.callTool('fail', { why: 'testing' }).catch((e: unknown) => e);
    expect(err).toMatchObject({
      code: 'tool_error',
      reason: 'tool_error',
      details: { content: [{ type: 'text', text: 'it broke: testing' }] },
    });
  });

  it('turns a JSON-RPC error into mcp_error', async () => {
    const err = await conn.callTool('echo', { text: 42 }).catch((e: unknown) => e);
    // The SDK's McpServer answers bad arguments with isError or -32602, depending on version.
    expect(['mcp_error', 'tool_error']).toContain((err as { code: string }).code);
  });

  it('forwards progress notifications', async () => {
    const seen: McpProgress[] = [];
    const res = await conn.callTool('progress', { steps: 3 }, { onProgress: (p) => seen.push(p) });
    expect(res.content).toEqual([{ type: 'text', text: 'did 3 steps' }]);
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));
  });

  it('an abort sends notifications/cancelled to the server', async () => {
    const ac = new AbortController();
    const started = new Promise<void>((resolve) => {
      void conn
        .callTool('hang', {}, { signal: ac.signal, onProgress: () => resolve() })
        .catch(() => undefined);
    });
    await started;
    const before = await conn.callTool('stats', {});
    ac.abort(new Error('stop'));
    // The server counts the cancellation when the hang call's signal fires; ask until it has.
    for (;;) {
      const stats = await conn.callTool('stats', {});
      const { canceled } = stats.structuredContent as { canceled: number };
      if (canceled > (before.structuredContent as { canceled: number }).canceled) break;
      await new Promise((r) => setTimeout(r, 20));
    }
  });

  it('a canceled call rejects with code canceled', async () => {
    const ac = new AbortController();
    const call = conn.callTool('hang', {}, { signal: ac.signal, onProgress: () => ac.abort() });
    await expect(call).rejects.toMatchObject({ code: 'canceled' });
  });
});

describe('stdio in an e2b sandbox (the fake E2B server, the real e2b SDK)', () => {
  it('lists and calls tools with progress through envd stdin and stdout', async () => {
    const fake = await startFakeE2b();
    const e2b = createE2bSandboxProvider({
      apiKey: fake.apiKey,
      apiUrl: fake.url,
      sandboxUrl: fake.url,
      domain: 'sandbox.test',
      template: 'base',
      workdir: '/home/user/work',
      requestTimeoutMs: 10_000,
      sandboxTimeoutSec: 600,
    });
    const box = await e2b.create({ key: { project: 'p', agent: '-', session: 'mcp' } });
    try {
      const conn = await connectMcp({
        transport: 'stdio',
        sandbox: box,
        command: process.execPath,
        args: [MCP_STDIO_SERVER_PATH, 'echo', 'progress'],
      });
      expect((await conn.listTools()).map((t) => t.name).sort()).toEqual(['echo', 'progress']);
      expect((await conn.callTool('echo', { text: 'e2b' })).content).toEqual([
        { type: 'text', text: 'echo: e2b' },
      ]);
      const seen: McpProgress[] = [];
      await conn.callTool('progress', { steps: 2 }, { onProgress: (p) => seen.push(p) });
      expect(seen).toHaveLength(2);
      await conn.close();
    } finally {
      await box.destroy();
      await e2b.close();
      await fake.stop();
    }
  });
});

describe('stdio: the server dying', () => {
  it('fails the call in flight with mcp_unavailable and says how the process ended', async () => {
    const conn = await endpoints.stdio();
    const closed = new Promise<string>((resolve) => conn.onClose(resolve));
    const err = await conn.callTool('crash', {}).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'mcp_unavailable', reason: 'connection_lost' });
    expect((err as Error).message).toContain('exited with code 3');
    expect((err as Error).message).toContain('crashing on purpose');
    expect(await closed).toContain('exited with code 3');
    expect(conn.closed).toBe(true);
  });

  it('a command that is not there fails to connect', async () => {
    const err = await connectMcp(
      { transport: 'stdio', sandbox, command: '/nonexistent/server' },
      { timeoutMs: 10_000 },
    ).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'mcp_unavailable', reason: 'connect_failed' });
  });
});

describe('http: a listing in pages', () => {
  it('follows nextCursor through every page', async () => {
    const paged = await startMcpHttpServer({ pageSize: 3 });
    try {
      const conn = await connectMcp({ transport: 'http', url: paged.url });
      const tools = await conn.listTools();
      expect(tools.map((t) => t.name).sort()).toEqual([...FIXTURE_TOOLS].sort());
      expect(paged.methods.filter((m) => m === 'tools/list')).toHaveLength(
        Math.ceil(FIXTURE_TOOLS.length / 3),
      );
      await conn.close();
    } finally {
      await paged.stop();
    }
  });
});

describe('http: tools/list_changed', () => {
  it('calls onToolsChanged when the server says its tool set changed', async () => {
    const server = await startMcpHttpServer({ tools: ['echo'] });
    try {
      let changed!: () => void;
      const seen = new Promise<void>((resolve) => (changed = resolve));
      const conn = await connectMcp(
        { transport: 'http', url: server.url },
        { onToolsChanged: () => changed() },
      );
      // Server notifications travel on the GET stream the client opens after the handshake.
      while (!server.requestHeaders.some((h) => h['accept'] === 'text/event-stream')) {
        await new Promise((r) => setTimeout(r, 10));
      }
      await conn.listTools(); // a round trip: the server has set the stream up by now
      server.setTools(['echo', 'stats']);
      await seen;
      expect((await conn.listTools()).map((t) => t.name).sort()).toEqual(['echo', 'stats']);
      await conn.close();
    } finally {
      await server.stop();
    }
  });
});

describe('http: errors', () => {
  it('an unreachable server is connect_failed', async () => {
    const err = await connectMcp({ transport: 'http', url: 'http://127.0.0.1:1/mcp' }).catch(
      (e: unknown) => e,
    );
    expect(err).toMatchObject({ code: 'mcp_unavailable', reason: 'connect_failed' });
  });

  it('sends the configured headers', () => {
    expect(http.requestHeaders.some((h) => h['x-test'] === 'yes')).toBe(true);
  });
});

describe('http: fallback to HTTP+SSE', () => {
  it('connects over SSE to a server without streamable HTTP, with the same headers', async () => {
    const old = await startMcpHttpServer({ sseOnly: true });
    try {
      const conn = await connectMcp({
        transport: 'http',
        url: old.url,
        headers: { 'x-test': 'sse' },
      });
      expect(conn.transport).toBe('sse');
      const res = await conn.callTool('echo', { text: 'old' });
      expect(res.content).toEqual([{ type: 'text', text: 'echo: old' }]);
      const seen: McpProgress[] = [];
      await conn.callTool('progress', { steps: 2 }, { onProgress: (p) => seen.push(p) });
      expect(seen).toHaveLength(2);
      await conn.close();
      expect(old.requestHeaders.filter((h) => h['x-test'] === 'sse').length).toBeGreaterThan(2);
    } finally {
      await old.stop();
    }
  });

  it('does not fall back when told not to', async () => {
    const old = await startMcpHttpServer({ sseOnly: true });
    try {
      const err = await connectMcp({ transport: 'http', url: old.url, sseFallback: false }).catch(
        (e: unknown) => e,
      );
      expect(err).toMatchObject({ code: 'mcp_unavailable', reason: 'connect_failed' });
    } finally {
      await old.stop();
    }
  });
});

describe('mapToolNames', () => {
  it('keeps ids, maps other characters to _, refuses what cannot fit or collides', () => {
    const m = mapToolNames(['echo', 'ns.dotted', 'ns_dotted', 'a/b', 'a.b', 'x'.repeat(65)]);
    expect(m).toEqual([
      { mcpName: 'echo', id: 'echo' },
      { mcpName: 'ns.dotted', id: undefined, refused: expect.stringContaining('ns_dotted') },
      { mcpName: 'ns_dotted', id: 'ns_dotted' },
      { mcpName: 'a/b', id: undefined, refused: expect.stringContaining('a_b') },
      { mcpName: 'a.b', id: undefined, refused: expect.stringContaining('a_b') },
      { mcpName: 'x'.repeat(65), id: undefined, refused: expect.stringContaining('does not fit') },
    ]);
  });
});
