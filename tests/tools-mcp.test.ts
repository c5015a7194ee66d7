// MCP tools end to end: the api registers a project's MCP servers, the tools service discovers
// their tools and runs their calls from the bus. Two real servers built with the official SDK:
// one over streamable HTTP in this process (its bearer token a project secret), one over stdio
// running under node inside a local sandbox (bubblewrap). Covered: discovery with name mapping
// and refusals, calls, isError results, progress events, cancel (the server sees
// notifications/cancelled), the stdio server dying mid-call and the next call reconnecting,
// refresh after the tool set changed (vanished tools disabled, returning ones enabled), delete,
// and tenancy (another project can neither manage nor call them).
import { randomBytes } from 'node:crypto';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection, Subscription } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import { decodeMessage, type ToolProgressEvent } from '@toolmesh/protocol';
import { createSecretBox } from '@toolmesh/store';
import {
  bundleMcpStdioServer,
  FIXTURE_TOOLS,
  type McpStdioBundle,
  startMcpHttpServer,
  type McpHttpFixture,
} from '@toolmesh/testing';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { until } from './support/procs.ts';

const SECRETS_KEY = randomBytes(32).toString('base64');
const TOKEN = `tok-${randomBytes(8).toString('hex')}`;

let api: TestApi;
let tools: ToolsService;
let http: McpHttpFixture;
let nc: NatsConnection;
let client: Client;
let sandboxRoot: string;
let bundle: McpStdioBundle;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  sandboxRoot = await mkdtemp(join(tmpdir(), 'toolmesh-mcp-sandboxes-'));
  // Sandboxes cannot read the checkout: the stdio server runs from its bundle's folder, which
  // the operator allows for reading like a tool installation in /opt.
  bundle = await bundleMcpStdioServer();
  api = await startTestApi({
    CG__SANDBOX__ROOT_DIR: sandboxRoot,
    CG__SANDBOX__READ_PATHS: JSON.stringify([bundle.dir]),
    CG__SECRETS__KEY: SECRETS_KEY,
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  tools = await startToolsService(
    loadConfig({ env: api.serviceEnv('tools') }),
    pino({ level: api.config.log.level }),
  );
  // Silent about tool changes: refreshes are asked for explicitly here (see 'announced').
  http = await startMcpHttpServer({ announce: false });
  nc = await api.nats.connect('admin');
  client = createClient({ nc, root: api.config.nats.subject_root });
  a = await api.createProject();
  b = await api.createProject();
  const box = createSecretBox(SECRETS_KEY);
  await api.store.secrets.put(a.id, 'web_token', box.seal(a.id, 'web_token', TOKEN));
}, 60_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await client?.close();
  await nc?.close();
  await http?.stop();
  await api?.close();
  if (sandboxRoot) await rm(sandboxRoot, { recursive: true, force: true });
  await bundle?.cleanup();
});

const req = (
  method: 'GET' | 'POST' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  project: { id: string; key: string } = a,
) => api.request(method, `/v1/projects/${project.id}${path}`, { key: project.key, body });

const call = (tool: string, args: Record<string, unknown> = {}, project = a.id) =>
  client.callTool({ project, channel: 'main', tool, arguments: args, timeoutMs: 30_000 });

/** Project a's active sandboxes of the stdio server `local`. */
async function activeLocalSandboxes(): Promise<unknown[]> {
  const list = (await req('GET', '/sandboxes?state=active')).body as {
    sandboxes: { session_key: string }[];
  };
  return list.sandboxes.filter((s) => s.session_key.startsWith('mcp:local@'));
}

/** Progress events of one target in project a, channel main. */
function collectProgress(target: string): { events: ToolProgressEvent[]; sub: Subscription } {
  const events: ToolProgressEvent[] = [];
  const sub = nc.subscribe(
    client.subjects.toolProgress({ project: a.id, channel: 'main', target }),
    { callback: (_e, m) => void events.push(decodeMessage('tool_progress', m.data)) },
  );
  return { events, sub };
}

const LONG_NAME = FIXTURE_TOOLS.find((n) => n.includes(' '))!;

describe('an MCP server over streamable HTTP', () => {
  it('is discovered: tools registered as <server>.<tool>, names mapped or refused', async () => {
    const res = await req('POST', '/mcp-servers', {
      name: 'web',
      transport: 'http',
      url: http.url,
      headers: { 'X-Client': 'toolmesh-test' },
      auth: { type: 'bearer', secret: 'web_token' },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({
      name: 'web',
      state: 'connected',
      last_error: null,
      tool_count: FIXTURE_TOOLS.length - 1,
    });
    expect([...res.body.refresh.added].sort()).toEqual(
      ['crash', 'echo', 'fail', 'hang', 'ns_dotted', 'progress', 'reach', 'stats'].map(
        (t) => `web.${t}`,
      ),
    );
    expect(res.body.refresh.refused).toEqual([
      { tool: LONG_NAME, reason: expect.stringContaining('does not fit an id') },
    ]);
    // The bearer token came from the project secret; the api never shows it.
    expect(http.requestHeaders.some((h) => h['authorization'] === `Bearer ${TOKEN}`)).toBe(true);
    expect(http.requestHeaders.some((h) => h['x-client'] === 'toolmesh-test')).toBe(true);
    expect(res.raw).not.toContain(TOKEN);

    const echo = await req('GET', '/tools/web.echo');
    expect(echo.body).toMatchObject({
      name: 'web.echo',
      target: 'web',
      origin: 'mcp',
      description: 'Returns its text',
      parameters: {
        type: 'object',
        properties: { text: { type: 'string' } },
        required: ['text'],
      },
      enabled: true,
    });
    expect(echo.body.parameters.$schema).toBeUndefined();
    const row = await api.store.tools.get(a.id, 'web.echo');
    expect(row?.spec).toEqual({
      server: 'web',
      tool: 'echo',
      schema: 'http://json-schema.org/draft-07/schema#',
    });
  });

  it('runs a call from the bus', async () => {
    const r = await call('web.echo', { text: 'hello' });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(r.content.result).toEqual({
      content: [{ type: 'text', text: 'echo: hello' }],
      structured_content: { text: 'hello' },
    });
    // A mapped name calls the server's own name.
    const dotted = await call('web.ns_dotted');
    expect(dotted.content.result).toEqual({ content: [{ type: 'text', text: 'ns.dotted' }] });
  });

  it('runs over POST /executions too, checked against the same schema', async () => {
    const ok = await req('POST', '/executions', { tool: 'web.echo', arguments: { text: 'api' } });
    expect(ok.status, ok.raw).toBe(200);
    expect(ok.body.card.content.result.content).toEqual([{ type: 'text', text: 'echo: api' }]);
    const bad = await req('POST', '/executions', { tool: 'web.echo', arguments: {} });
    expect(bad.status, bad.raw).toBe(400);
  });

  it('checks arguments against the discovered schema before calling', async () => {
    const r = await call('web.echo', { text: 7 });
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('invalid_arguments');
  });

  it('turns isError into a failed result with code tool_error and the content in details', async () => {
    const r = await call('web.fail', { why: 'on purpose' });
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({
      code: 'tool_error',
      details: { content: [{ type: 'text', text: 'it broke: on purpose' }] },
    });
  });

  it("publishes the server's progress notifications as the call's progress events", async () => {
    const { events, sub } = collectProgress('web');
    const r = await call('web.progress', { steps: 3 });
    expect(r.status).toBe('succeeded');
    const mine = await until(() => {
      const m = events.filter((e) => e.tool_call_id === r.tool_call_id);
      return Promise.resolve(m.length === 3 ? m : undefined);
    });
    sub.unsubscribe();
    expect(mine.map((e) => e.detail)).toEqual(
      [1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })),
    );
    expect(mine.every((e) => e.tool_name === 'web.progress')).toBe(true);
  });

  it('a cancel of the call sends notifications/cancelled to the server', async () => {
    const before = http.state.canceled;
    const { events, sub } = collectProgress('web');
    const toolCallId = `hang-${randomBytes(6).toString('hex')}`;
    const result = client.callTool({
      project: a.id,
      channel: 'main',
      tool: 'web.hang',
      toolCallId,
      timeoutMs: 60_000,
    });
    await until(() => Promise.resolve(events.find((e) => e.tool_call_id === toolCallId)));
    sub.unsubscribe();
    await client.cancel({ project: a.id, channel: 'main', toolCallId, reason: 'test' });
    const r = await result;
    expect(r.status).toBe('canceled');
    await until(() => Promise.resolve(http.state.canceled > before ? true : undefined));
  });

  it('refresh after the tool set changed: vanished tools disabled, returning ones enabled', async () => {
    http.setTools(['echo', 'stats']);
    const res = await req('POST', '/mcp-servers/web/refresh');
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ state: 'connected', tool_count: 2 });
    expect([...res.body.refresh.disabled].sort()).toEqual(
      ['crash', 'fail', 'hang', 'ns_dotted', 'progress', 'reach'].map((t) => `web.${t}`),
    );
    const fail = await req('GET', '/tools/web.fail');
    expect(fail.body.enabled).toBe(false);
    const r = await call('web.fail');
    expect(r.content.error?.code).toBe('tool_disabled');
    expect((await call('web.echo', { text: 'still' })).status).toBe('succeeded');

    http.setTools(FIXTURE_TOOLS);
    const back = await req('POST', '/mcp-servers/web/refresh');
    expect(back.body.tool_count).toBe(FIXTURE_TOOLS.length - 1);
    expect(back.body.refresh.updated).toContain('web.fail');
    expect((await req('GET', '/tools/web.fail')).body.enabled).toBe(true);
    expect((await call('web.fail')).content.error?.code).toBe('tool_error');
  });

  it('the server dropping every connection mid-call fails that call; the next call reconnects', async () => {
    // Without retries: a transport error is otherwise retried (here: the hang again).
    const patched = await req('PATCH', '/tools/web.hang', { options: { retries: { max: 0 } } });
    expect(patched.status, patched.raw).toBe(200);
    const { events, sub } = collectProgress('web');
    const toolCallId = `drop-${randomBytes(6).toString('hex')}`;
    const result = client.callTool({
      project: a.id,
      channel: 'main',
      tool: 'web.hang',
      toolCallId,
      timeoutMs: 60_000,
    });
    await until(() => Promise.resolve(events.find((e) => e.tool_call_id === toolCallId)));
    sub.unsubscribe();
    await http.dropConnections();
    const r = await result;
    expect(r.status, JSON.stringify(r.content)).toBe('failed');
    expect(r.content.error?.code).toBe('mcp_unavailable');
    const next = await call('web.echo', { text: 'again' });
    expect(next.status, JSON.stringify(next.content)).toBe('succeeded');
  });

  it('a call past its deadline times out, and the server is told to stop', async () => {
    const before = http.state.canceled;
    const r = await client.callTool({
      project: a.id,
      channel: 'main',
      tool: 'web.hang',
      timeoutMs: 500,
    });
    expect(r.status).toBe('timeout');
    await until(() => Promise.resolve(http.state.canceled > before ? true : undefined));
  });

  it('a server that announces a changed tool set is refreshed without being asked', async () => {
    const live = await startMcpHttpServer({ tools: ['echo', 'stats'] });
    try {
      const res = await req('POST', '/mcp-servers', {
        name: 'live',
        transport: 'http',
        url: live.url,
      });
      expect(res.body).toMatchObject({ state: 'connected', tool_count: 2 });
      // A call opens the tools service's pooled connection, whose stream carries the news.
      expect((await call('live.echo', { text: 'x' })).status).toBe('succeeded');
      while (!live.requestHeaders.some((h) => h['accept'] === 'text/event-stream')) {
        await new Promise((r) => setTimeout(r, 10));
      }
      expect((await call('live.stats')).status).toBe('succeeded');
      live.setTools(['echo', 'fail']);
      await until(async () => {
        const [stats, fail] = await Promise.all([
          req('GET', '/tools/live.stats'),
          req('GET', '/tools/live.fail'),
        ]);
        return stats.body.enabled === false && fail.status === 200 ? true : undefined;
      });
      expect((await call('live.fail')).content.error?.code).toBe('tool_error');
    } finally {
      await req('DELETE', '/mcp-servers/live');
      await live.stop();
    }
  });

  it('an unreachable server is registered in state error with the reason', async () => {
    const res = await req('POST', '/mcp-servers', {
      name: 'gone',
      transport: 'http',
      url: 'http://127.0.0.1:1/mcp',
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ state: 'error', tool_count: 0 });
    expect(res.body.last_error).toContain('could not connect');
    const list = await req('GET', '/mcp-servers');
    expect(list.body.mcp_servers.find((s: { name: string }) => s.name === 'gone')).toMatchObject({
      state: 'error',
    });
  });
});

describe('egress', () => {
  it('an http server at an address the operator has not allowed is refused', async () => {
    // 127.0.0.1 is allowed in this test; ::1 (loopback too) is not.
    const url = http.url.replace('127.0.0.1', '[::1]');
    const res = await req('POST', '/mcp-servers', { name: 'loop6', transport: 'http', url });
    expect(res.status, res.raw).toBe(201);
    expect(res.body.state).toBe('error');
    expect(res.body.last_error).toContain('egress to ::1 is refused');
  });
});

describe('an MCP server over stdio inside a sandbox', () => {
  it('is discovered and called; progress and cancel reach it through the sandbox pipes', async () => {
    const res = await req('POST', '/mcp-servers', {
      name: 'local',
      transport: 'stdio',
      command: 'node',
      args: [bundle.file],
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({ state: 'connected', tool_count: FIXTURE_TOOLS.length - 1 });
    const echo = await call('local.echo', { text: 'from a sandbox' });
    expect(echo.content.result).toMatchObject({
      content: [{ type: 'text', text: 'echo: from a sandbox' }],
    });

    const { events, sub } = collectProgress('local');
    const p = await call('local.progress', { steps: 2 });
    expect(p.status).toBe('succeeded');
    await until(() =>
      Promise.resolve(
        events.filter((e) => e.tool_call_id === p.tool_call_id).length === 2 ? true : undefined,
      ),
    );

    const toolCallId = `hang-${randomBytes(6).toString('hex')}`;
    const hung = client.callTool({
      project: a.id,
      channel: 'main',
      tool: 'local.hang',
      toolCallId,
      timeoutMs: 60_000,
    });
    await until(() => Promise.resolve(events.find((e) => e.tool_call_id === toolCallId)));
    sub.unsubscribe();
    await client.cancel({ project: a.id, channel: 'main', toolCallId });
    expect((await hung).status).toBe('canceled');
    await until(async () => {
      const stats = await call('local.stats');
      const s = (stats.content.result as { structured_content: { canceled: number } })
        .structured_content;
      return s.canceled >= 1 ? true : undefined;
    });

    // The sandbox has no network unless [sandbox] allowed_domains says so: the server cannot
    // reach even the HTTP server this test runs.
    const reach = await call('local.reach', { url: http.url });
    expect(reach.status).toBe('succeeded');
    expect(reach.content.result).toMatchObject({ structured_content: { ok: false } });

    // The server runs in a sandbox session of the project, recorded for the reaper.
    const sandboxes = await req('GET', '/sandboxes?state=active');
    expect(
      sandboxes.body.sandboxes.some((s: { session_key: string }) =>
        s.session_key.startsWith('mcp:local@'),
      ),
    ).toBe(true);
  });

  it('concurrent calls share one server process and one sandbox', async () => {
    const results = await Promise.all(
      Array.from({ length: 20 }, (_, i) => call('local.echo', { text: `n${i}` })),
    );
    expect(results.map((r) => r.status)).toEqual(Array(20).fill('succeeded'));
    expect(
      results.map((r) => (r.content.result as { content: { text: string }[] }).content[0]!.text),
    ).toEqual(Array.from({ length: 20 }, (_, i) => `echo: n${i}`));
    const sandboxes = (await req('GET', '/sandboxes?state=active')).body as {
      sandboxes: { session_key: string }[];
    };
    expect(sandboxes.sandboxes.filter((s) => s.session_key.startsWith('mcp:local@'))).toHaveLength(
      1,
    );
  });

  it('the server dying mid-call fails that call with mcp_unavailable; the next call reconnects', async () => {
    expect((await call('local.echo', { text: 'before' })).status).toBe('succeeded');
    const crashed = await call('local.crash');
    expect(crashed.status).toBe('failed');
    expect(crashed.content.error).toMatchObject({
      code: 'mcp_unavailable',
      details: { reason: 'connection_lost', server: 'local' },
    });
    expect(crashed.content.error?.message).toContain('exited with code 3');
    expect(crashed.content.error?.message).toContain('crashing on purpose');
    // A new server process: its cancel count starts again from zero.
    const after = await call('local.stats');
    expect(after.status, JSON.stringify(after.content)).toBe('succeeded');
    expect(after.content.result).toMatchObject({ structured_content: { canceled: 0 } });
    const again = await call('local.echo', { text: 'back' });
    expect(again.status).toBe('succeeded');
    // The new process runs in a sandbox recorded active (the dead one's end, if still under way
    // when the next call came, is waited for rather than marking the new one destroyed).
    await until(async () => ((await activeLocalSandboxes()).length === 1 ? true : undefined));
  });
});

describe('tenancy', () => {
  it("project B can neither manage nor call project A's MCP servers", async () => {
    for (const [method, path] of [
      ['GET', '/mcp-servers/web'],
      ['POST', '/mcp-servers/web/refresh'],
      ['DELETE', '/mcp-servers/web'],
    ] as const) {
      const r = await api.request(method, `/v1/projects/${a.id}${path}`, { key: b.key });
      expect(r.status, `${method} ${path}`).toBe(404);
    }
    const own = await req('GET', '/mcp-servers', undefined, b);
    expect(own.body.mcp_servers).toEqual([]);
    const r = await call('web.echo', { text: 'x' }, b.id);
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('unknown_tool');
    // A's server still works.
    expect((await call('web.echo', { text: 'a' })).status).toBe('succeeded');
  });
});

describe('delete', () => {
  it('removes the server and its tools; their calls then fail unknown_tool', async () => {
    const del = await req('DELETE', '/mcp-servers/web');
    expect(del.status, del.raw).toBe(204);
    const left = await req('GET', '/tools?origin=mcp');
    expect(left.body.tools.map((t: { name: string }) => t.name)).not.toContain('web.echo');
    expect((await req('GET', '/mcp-servers/web')).status).toBe(404);
    const r = await call('web.echo', { text: 'x' });
    expect(r.content.error?.code).toBe('unknown_tool');
  });

  it('deleting a stdio server ends its process and its sandbox at once', async () => {
    // A server process is running (a slow run of the tests above may have let it idle out).
    expect((await call('local.echo', { text: 'live' })).status).toBe('succeeded');
    await until(async () => ((await activeLocalSandboxes()).length === 1 ? true : undefined));
    expect((await req('DELETE', '/mcp-servers/local')).status).toBe(204);
    await until(async () => ((await activeLocalSandboxes()).length === 0 ? true : undefined));
    const r = await call('local.echo', { text: 'x' });
    expect(r.content.error?.code).toBe('unknown_tool');
  });
});
