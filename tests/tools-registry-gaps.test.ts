// The registry's smaller gaps, against real servers (api, tools service, NATS, Postgres, MCP
// servers built with the official SDK, a local HTTP upstream):
// - an MCP server switched off without deleting it: its tools are disabled (calls fail
//   tool_disabled, MCP clients no longer see them), its connections closed, a refresh refused;
//   switched on again its tools come back (not one a user had disabled by hand) and it is
//   listed again on a new connection; the same from `toolmesh mcp-servers disable|enable`;
// - tool version and deprecation: deprecated tools are left out of lists unless asked for,
//   still run, and their cards carry a deprecation note;
// - several tags (a tool must carry all of them) and counts per category and tag;
// - pin_definitions per project: one project pinned and one not, the same server change held in
//   one and applied in the other.
// Another project's key is refused at every new route.
import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMcpHttpServer, type McpHttpFixture } from '@toolmesh/testing';
import { expectError } from '../services/api/src/test/support.ts';
import { runToolmesh } from './support/cli.ts';
import { until } from './support/procs.ts';
import { startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';

type Project = { id: string; key: string };
type Body = Record<string, unknown>;

let mesh: ToolsMesh;
let web: McpHttpFixture;
let docs: McpHttpFixture;
let upstream: Server;
let upstreamUrl: string;
let apiUrl: string;
let a: Project;
let b: Project;
let c: Project;

beforeAll(async () => {
  web = await startMcpHttpServer({ tools: ['echo', 'fail', 'progress'], announce: false });
  docs = await startMcpHttpServer({ tools: ['echo'], announce: false });
  upstream = createServer((req, res) => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ pong: req.url }));
  });
  upstream.listen(0, '127.0.0.1');
  await new Promise((r) => upstream.once('listening', r));
  upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  mesh = await startToolsMesh({ CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]' });
  apiUrl = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
  a = await mesh.api.createProject();
  b = await mesh.api.createProject();
  c = await mesh.api.createProject();
}, 120_000);
afterAll(async () => {
  await mesh?.close();
  await web?.stop();
  await docs?.stop();
  await new Promise((r) => upstream?.close(r));
});

const req = (
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  body?: unknown,
  project: Project = a,
  key = project.key,
) => mesh.request(method, `/v1/projects/${project.id}${path}`, { key, body });

const call = (tool: string, args: Record<string, unknown>, project: Project = a) =>
  mesh.client.callTool(
    { project: project.id, channel: 'main', tool, arguments: args, timeoutMs: 30_000 },
    { waitMs: 60_000 },
  );

const cli = (args: string[], project: Project, key = project.key) =>
  runToolmesh(args, {
    TOOLMESH_API_URL: apiUrl,
    TOOLMESH_API_KEY: key,
    TOOLMESH_PROJECT: project.id,
  });

/** What an MCP client of the project's facade is offered. */
async function facadeTools(project: Project): Promise<string[]> {
  const client = new Client({ name: 'gaps-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${apiUrl}/v1/projects/${project.id}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${project.key}` } },
    }),
  );
  try {
    return (await client.listTools()).tools.map((t) => t.title ?? t.name);
  } finally {
    await client.close();
  }
}

/** Log lines of the tools service saying a connection to a's server `web` closed. */
const closedLines = () =>
  mesh.logs.filter(
    (l) =>
      l.includes('"MCP connection closed"') &&
      l.includes('"mcp_server":"web"') &&
      l.includes(`"project":"${a.id}"`),
  ).length;
const count = (fixture: McpHttpFixture, method: string) =>
  fixture.methods.filter((m) => m === method).length;

describe('disabling and enabling an MCP server', () => {
  it('switches its tools and its connections off, and back on with a refresh', async () => {
    const created = await req('POST', '/mcp-servers', {
      name: 'web',
      transport: 'http',
      url: web.url,
    });
    expect(created.status, created.raw).toBe(201);
    expect(created.body).toMatchObject({ enabled: true, state: 'connected' });
    expect((await call('web.echo', { text: 'on' })).status).toBe('succeeded');
    // A user switches web.fail off by hand; the server switch must leave that alone.
    expect((await req('PATCH', '/tools/web.fail', { enabled: false })).status).toBe(200);
    expect(await facadeTools(a)).toContain('web.echo');

    // Another project's key can neither disable nor enable it.
    expectError(await req('POST', '/mcp-servers/web/disable', {}, a, b.key), 404, 'not_found');
    expectError(await req('POST', '/mcp-servers/web/enable', {}, a, b.key), 404, 'not_found');
    expectError(await req('POST', '/mcp-servers/web/disable', {}, b), 404, 'not_found');
    expectError(await req('POST', '/mcp-servers/nothing/disable'), 404, 'not_found');

    const closedBefore = closedLines();
    const disabled = await req('POST', '/mcp-servers/web/disable');
    expect(disabled.status, disabled.raw).toBe(200);
    expect(disabled.body).toMatchObject({
      name: 'web',
      enabled: false,
      tools_disabled: ['web.echo', 'web.progress'],
    });
    // The tools service closed its pooled connection to the server.
    await until(() => Promise.resolve(closedLines() > closedBefore ? true : undefined), 30_000);

    const calls = count(web, 'tools/call');
    const refused = await call('web.echo', { text: 'off' });
    expect(refused.status).toBe('failed');
    expect(refused.content.error?.code).toBe('tool_disabled');
    expect(refused.content.error?.message).toContain('its MCP server web is disabled');
    expect(count(web, 'tools/call')).toBe(calls);
    expect((await req('GET', '/tools/web.echo')).body).toMatchObject({ enabled: false });
    expect(await facadeTools(a)).not.toContain('web.echo');
    expect((await req('GET', '/mcp-servers/web')).body).toMatchObject({ enabled: false });
    expectError(await req('POST', '/mcp-servers/web/refresh'), 409, 'mcp_server_disabled');
    // Switched off by hand while the server is off, web.progress stays off when it returns.
    expect((await req('PATCH', '/tools/web.progress', { enabled: false })).status).toBe(200);
    // Its tools follow the server: one cannot be switched on alone.
    expectError(
      await req('PATCH', '/tools/web.echo', { enabled: true }),
      409,
      'mcp_server_disabled',
    );
    // Disabling again changes nothing and is no error.
    expect((await req('POST', '/mcp-servers/web/disable')).body).toMatchObject({
      enabled: false,
      tools_disabled: [],
    });

    const initializes = count(web, 'initialize');
    const enabled = await req('POST', '/mcp-servers/web/enable');
    expect(enabled.status, enabled.raw).toBe(200);
    expect(enabled.body).toMatchObject({
      enabled: true,
      state: 'connected',
      tools_enabled: ['web.echo'],
      refresh: { added: [], disabled: [] },
    });
    // Listed again on a new connection: the old one was closed.
    expect(count(web, 'initialize')).toBe(initializes + 1);
    const back = await call('web.echo', { text: 'back' });
    expect(back.status, JSON.stringify(back.content)).toBe('succeeded');
    expect(await facadeTools(a)).toContain('web.echo');
    // The tools switched off by hand, before and during, are still off.
    expect((await req('GET', '/tools/web.fail')).body).toMatchObject({ enabled: false });
    expect((await req('GET', '/tools/web.progress')).body).toMatchObject({ enabled: false });
  }, 180_000);

  it('toolmesh mcp-servers disable|enable does the same, for its own project only', async () => {
    const other = await cli(['mcp-servers', 'disable', 'web'], a, b.key);
    expect(other.code).toBe(4);
    expect((await call('web.echo', { text: 'x' })).status).toBe('succeeded');

    const off = await cli(['mcp-servers', 'disable', 'web'], a);
    expect(off.code, off.stderr).toBe(0);
    expect(off.stdout).toContain('web: disabled, 1 tools switched off');
    expect((await call('web.echo', { text: 'x' })).content.error?.code).toBe('tool_disabled');
    const list = await cli(['mcp-servers', 'list', '--json'], a);
    expect(JSON.parse(list.stdout)).toMatchObject({
      mcp_servers: [{ name: 'web', enabled: false }],
    });

    const on = await cli(['mcp-servers', 'enable', 'web'], a);
    expect(on.code, on.stderr).toBe(0);
    expect(on.stdout).toContain('web: enabled, 1 tools switched on again');
    expect(on.stdout).toContain('web: connected');
    expect((await call('web.echo', { text: 'x' })).status).toBe('succeeded');
  }, 120_000);
});

describe('tool version and deprecation', () => {
  it('hides deprecated tools from lists unless asked, runs them, and notes it on the card', async () => {
    const made = await req('POST', '/tools', {
      name: 'legacy.ping',
      description: 'Pings the old API',
      category: 'legacy',
      parameters: { type: 'object', properties: {} },
      kind: 'http',
      http: { method: 'GET', url: `${upstreamUrl}/ping` },
      version: '1.2.0',
      deprecated: true,
      deprecation_message: 'use modern.ping instead',
    });
    expect(made.status, made.raw).toBe(201);
    expect(made.body).toMatchObject({
      version: '1.2.0',
      deprecated: true,
      deprecation_message: 'use modern.ping instead',
    });
    const modern = await req('POST', '/tools', {
      name: 'modern.ping',
      description: 'Pings the new API',
      category: 'legacy',
      parameters: { type: 'object', properties: {} },
      kind: 'http',
      http: { method: 'GET', url: `${upstreamUrl}/v2/ping` },
      version: '2.0.0',
    });
    expect(modern.status, modern.raw).toBe(201);

    const names = (body: Body) => (body['tools'] as { name: string }[]).map((t) => t.name);
    const listed = await req('GET', '/tools?category=legacy');
    expect(names(listed.body)).toEqual(['modern.ping']);
    expect(listed.body['counts']).toEqual({ total: 1, categories: { legacy: 1 }, tags: {} });
    const all = await req('GET', '/tools?category=legacy&include_deprecated=true');
    expect(names(all.body)).toEqual(['legacy.ping', 'modern.ping']);
    expect(all.body['counts']).toMatchObject({ total: 2 });
    // Read by name, a deprecated tool is there as always.
    expect((await req('GET', '/tools/legacy.ping')).status).toBe(200);
    expectError(await req('GET', '/tools?include_deprecated=yes'), 400, 'invalid_request');
    expectError(
      await req('GET', '/tools?include_deprecated=true', undefined, a, b.key),
      404,
      'not_found',
    );

    const r = await call('legacy.ping', {});
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(r.content.result).toEqual({ pong: '/ping' });
    const card = await req('GET', `/cards/${r.card_id}`);
    expect(card.status, card.raw).toBe(200);
    expect(card.body['metadata']).toMatchObject({
      deprecation: { deprecated: true, message: 'use modern.ping instead', version: '1.2.0' },
    });
    const fresh = await call('modern.ping', {});
    const freshCard = await req('GET', `/cards/${fresh.card_id}`);
    expect(freshCard.body['metadata']).not.toHaveProperty('deprecation');

    // No longer deprecated: listed again, and its cards carry no note.
    const patched = await req('PATCH', '/tools/legacy.ping', {
      deprecated: false,
      deprecation_message: null,
      version: '1.3.0',
    });
    expect(patched.body).toMatchObject({
      deprecated: false,
      deprecation_message: null,
      version: '1.3.0',
    });
    expect(names((await req('GET', '/tools?category=legacy')).body)).toEqual([
      'legacy.ping',
      'modern.ping',
    ]);
    const again = await call('legacy.ping', {});
    expect((await req('GET', `/cards/${again.card_id}`)).body['metadata']).not.toHaveProperty(
      'deprecation',
    );
    expectError(
      await req('PATCH', '/tools/legacy.ping', { deprecated: true }, a, b.key),
      404,
      'not_found',
    );
    expectError(
      await req('PATCH', '/tools/legacy.ping', { version: 'x'.repeat(101) }),
      400,
      'invalid_request',
    );
  }, 120_000);
});

describe('several tags and counts', () => {
  it('matches tools carrying every tag given, and counts categories and tags of the whole set', async () => {
    const tag = `t${randomUUID().slice(0, 8)}`;
    const register = (name: string, category: string, tags: string[]) =>
      req('POST', '/tools', {
        name,
        description: `tagged tool ${tag}`,
        category,
        tags,
        parameters: { type: 'object' },
      });
    for (const [name, category, tags] of [
      ['tagged.both', 'search', [tag, 'web', 'fast']],
      ['tagged.web', 'search', [tag, 'web']],
      ['tagged.fast', 'compute', [tag, 'fast']],
      ['tagged.old', 'compute', [tag, 'web', 'fast']],
    ] as const) {
      expect((await register(name, category, [...tags])).status).toBe(201);
    }
    expect((await req('PATCH', '/tools/tagged.old', { deprecated: true })).status).toBe(200);

    const list = async (query: string) => {
      const res = await req('GET', `/tools?${query}`);
      expect(res.status, res.raw).toBe(200);
      return {
        names: (res.body['tools'] as { name: string }[]).map((t) => t.name),
        counts: res.body['counts'],
      };
    };
    expect(await list(`tag=${tag}&tag=web&tag=fast`)).toEqual({
      names: ['tagged.both'],
      counts: { total: 1, categories: { search: 1 }, tags: { [tag]: 1, web: 1, fast: 1 } },
    });
    expect(await list(`tag=${tag}&tag=web`)).toEqual({
      names: ['tagged.both', 'tagged.web'],
      counts: { total: 2, categories: { search: 2 }, tags: { [tag]: 2, web: 2, fast: 1 } },
    });
    // The counts are of the whole set, not of the page.
    expect(await list(`tag=${tag}&limit=1`)).toEqual({
      names: ['tagged.both'],
      counts: {
        total: 3,
        categories: { search: 2, compute: 1 },
        tags: { [tag]: 3, web: 2, fast: 2 },
      },
    });
    expect((await list(`tag=${tag}&include_deprecated=true`)).counts).toEqual({
      total: 4,
      categories: { search: 2, compute: 2 },
      tags: { [tag]: 4, web: 3, fast: 3 },
    });
    expect(await list(`tag=${tag}&tag=nowhere`)).toEqual({
      names: [],
      counts: { total: 0, categories: {}, tags: {} },
    });
    // Without a filter the counts cover the project's whole registry.
    const whole = await list('');
    expect((whole.counts as { total: number }).total).toBe(whole.names.length);

    // The same from the command line.
    const cliList = async (args: string[]) => {
      const r = await cli(['tools', 'list', '--json', ...args], a);
      expect(r.code, r.stderr).toBe(0);
      return (JSON.parse(r.stdout) as { tools: { name: string }[] }).tools.map((t) => t.name);
    };
    expect(await cliList(['--tag', tag, '--tag', 'fast'])).toEqual(['tagged.both', 'tagged.fast']);
    expect(await cliList(['--tag', tag, '--tag', 'fast', '--include-deprecated'])).toEqual([
      'tagged.both',
      'tagged.fast',
      'tagged.old',
    ]);

    expectError(await req('GET', '/tools?tag=a%20b'), 400, 'invalid_request');
    const many = Array.from({ length: 17 }, (_, i) => `tag=t${i}`).join('&');
    expectError(await req('GET', `/tools?${many}`), 400, 'invalid_request');
    expectError(await req('GET', `/tools?tag=${tag}`, undefined, a, b.key), 404, 'not_found');
  });
});

describe('pin_definitions per project', () => {
  it('holds a changed definition in the pinned project and applies it in the other', async () => {
    expectError(
      await req('PATCH', '/settings', { tools: { pin_definitions: false } }, c, a.key),
      404,
      'not_found',
    );
    expectError(await req('GET', '/settings', undefined, c, a.key), 404, 'not_found');
    expectError(
      await req('PATCH', '/settings', { tools: { pin_definitions: 'no' } }, c),
      400,
      'invalid_request',
    );
    expectError(
      await req('PATCH', '/settings', { tools: { pin: false } }, c),
      400,
      'invalid_request',
    );
    expect((await req('GET', '/settings', undefined, a)).body).toEqual({
      settings: {},
      effective: { tools: { pin_definitions: true, mcp_sampling_llm: false } },
    });
    const set = await req('PATCH', '/settings', { tools: { pin_definitions: false } }, c);
    expect(set.status, set.raw).toBe(200);
    expect(set.body).toEqual({
      settings: { tools: { pin_definitions: false } },
      effective: { tools: { pin_definitions: false, mcp_sampling_llm: false } },
    });
    // The other project is untouched by c's setting.
    expect((await req('GET', '/settings', undefined, a)).body).toMatchObject({ settings: {} });

    for (const p of [a, c]) {
      const r = await req(
        'POST',
        '/mcp-servers',
        { name: 'docs', transport: 'http', url: docs.url },
        p,
      );
      expect(r.status, r.raw).toBe(201);
      expect(r.body['refresh']).toMatchObject({ added: ['docs.echo'] });
    }
    docs.setDescription('echo', 'Returns its text, and now something else too');

    const pinned = await req('POST', '/mcp-servers/docs/refresh', undefined, a);
    expect(pinned.body['refresh']).toMatchObject({ updated: [], held: ['docs.echo'] });
    expect((await req('GET', '/tools/docs.echo', undefined, a)).body).toMatchObject({
      description: 'Returns its text',
      pending_definition: {
        proposed: { description: 'Returns its text, and now something else too' },
      },
    });
    expect((await call('docs.echo', { text: 'x' }, a)).content.error?.code).toBe(
      'definition_changed',
    );

    const open = await req('POST', '/mcp-servers/docs/refresh', undefined, c);
    expect(open.body['refresh']).toMatchObject({ updated: ['docs.echo'], held: [] });
    expect((await req('GET', '/tools/docs.echo', undefined, c)).body).toMatchObject({
      description: 'Returns its text, and now something else too',
      pending_definition: null,
    });
    const ran = await call('docs.echo', { text: 'x' }, c);
    expect(ran.status, JSON.stringify(ran.content)).toBe('succeeded');

    // Back to the deployment's default: c pins again from its next change on.
    const reset = await req('PATCH', '/settings', { tools: { pin_definitions: null } }, c);
    expect(reset.body).toEqual({
      settings: {},
      effective: { tools: { pin_definitions: true, mcp_sampling_llm: false } },
    });
    docs.setDescription('echo', 'A third description');
    const held = await req('POST', '/mcp-servers/docs/refresh', undefined, c);
    expect(held.body['refresh']).toMatchObject({ updated: [], held: ['docs.echo'] });
  }, 180_000);
});
