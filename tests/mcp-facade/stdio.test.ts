// `toolmesh mcp serve` on stdio, driven by the SDK's stdio client the way an MCP client starts
// it: the CLI as a child process with its key in the environment, relaying to the api. Covered:
// initialize and list, builtin.echo answered from its card, an idempotent re-send, the agent
// flag, a 2.x client negotiating 2026-07-28 through the relay, `--server` (one MCP server under
// its own names), and another project's key refused.
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { Client as ModernClient } from '@modelcontextprotocol/client';
import { StdioClientTransport as ModernStdio } from '@modelcontextprotocol/client/stdio';
import { addMcpFixture, startFacadeMesh, type FacadeMesh } from './support.ts';

const MAIN = join(import.meta.dirname, '..', '..', 'packages/cli/src/main.ts');

let mesh: FacadeMesh;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

async function serve(key: string, ...extra: string[]): Promise<Client> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [MAIN, 'mcp', 'serve', '--project', mesh.project.id, ...extra],
    env: { PATH: process.env['PATH'] ?? '', TOOLMESH_API_URL: mesh.baseUrl, TOOLMESH_API_KEY: key },
    stderr: 'pipe',
  });
  const client = new Client({ name: 'stdio-test', version: '1.0.0' });
  clients.push(client);
  await client.connect(transport);
  return client;
}

describe('toolmesh mcp serve', () => {
  it('serves the project over stdio: list, call, idempotent re-send', async () => {
    const client = await serve(mesh.project.key);
    expect(client.getServerVersion()?.name).toBe('toolmesh');
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toContain('builtin__echo');
    const call = {
      name: 'builtin__echo',
      arguments: { via: 'stdio' },
      _meta: { 'io.toolmesh/idempotency-key': `stdio-${Date.now()}` },
    };
    const a = await client.callTool(call);
    expect(a.structuredContent).toEqual({ via: 'stdio' });
    const b = await client.callTool(call);
    expect(b).toEqual(a);
  });

  it('limits the tools to an agent with --agent', async () => {
    const post = (path: string, body: unknown) =>
      mesh.api.request('POST', `/v1/projects/${mesh.project.id}${path}`, {
        key: mesh.project.key,
        body,
      });
    expect(
      (await post('/profiles', { name: 'echoer', allowed_tools: ['builtin.echo'] })).status,
    ).toBe(201);
    expect((await post('/agents', { id: 'stdio-bot', profile: 'echoer' })).status).toBe(201);
    const client = await serve(mesh.project.key, '--agent', 'stdio-bot');
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['builtin__echo']);
  });

  it('relays 2026-07-28 too: a 2.x client negotiates it through the command', async () => {
    const client = new ModernClient(
      { name: 'stdio-modern', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new ModernStdio({
        command: process.execPath,
        args: [MAIN, 'mcp', 'serve', '--project', mesh.project.id],
        env: {
          PATH: process.env['PATH'] ?? '',
          TOOLMESH_API_URL: mesh.baseUrl,
          TOOLMESH_API_KEY: mesh.project.key,
        },
        stderr: 'pipe',
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      // The tasks extension and the registry's annotations come through the relay too.
      expect(client.getServerCapabilities()?.extensions).toMatchObject({
        'io.modelcontextprotocol/tasks': {},
      });
      const { tools } = await client.listTools();
      expect(tools.find((t) => t.name === 'skills__start_job')).toMatchObject({
        annotations: { destructiveHint: true },
        _meta: { 'io.toolmesh/long-running': true },
      });
      const res = await client.callTool({ name: 'builtin__echo', arguments: { via: 'modern' } });
      expect(res.structuredContent).toEqual({ via: 'modern' });
    } finally {
      await client.close();
    }
  });

  it("--server serves one MCP server under its own names; another's server is not found", async () => {
    const web = await addMcpFixture(mesh);
    try {
      const client = await serve(mesh.project.key, '--server', 'web');
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('echo');
      expect(names).not.toContain('builtin__echo');
      const res = await client.callTool({ name: 'echo', arguments: { text: 'stdio' } });
      expect(res.content).toEqual([{ type: 'text', text: 'echo: stdio' }]);
      await expect(serve(mesh.project.key, '--server', 'nosuch')).rejects.toThrow(/not found/i);
    } finally {
      await web.stop();
    }
  });

  it("refuses another project's key: initialize fails", async () => {
    const other = await mesh.api.createProject();
    await expect(serve(other.key)).rejects.toThrow(/not_found|not found/);
  });
});
