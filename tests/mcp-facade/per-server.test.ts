// One MCP server of a project at its own endpoint (/v1/projects/:p/mcp-servers/:name/mcp): its
// tools under the names the server gives them, with the input schemas, progress and isError
// content the server sent, on both revisions; each call still a mesh call with one card. Another
// project reaches none of it: not with its key, not by naming its own server under this project,
// not with a session opened elsewhere.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { addMcpFixture, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: Awaited<ReturnType<typeof addMcpFixture>>;
let direct: Client;
let other: { id: string; key: string };
beforeAll(async () => {
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  fixture = await addMcpFixture(mesh);
  direct = new Client({ name: 'direct', version: '1.0.0' });
  await direct.connect(new StreamableHTTPClientTransport(new URL(fixture.fixture.url)));
  other = await mesh.api.createProject();
  const res = await mesh.api.request('POST', `/v1/projects/${other.id}/mcp-servers`, {
    key: other.key,
    body: { name: 'theirs', transport: 'http', url: fixture.fixture.url },
  });
  if (res.status !== 201) throw new Error(`registering the other project's server: ${res.raw}`);
});
afterAll(async () => {
  await direct?.close();
  await fixture?.stop();
  await mesh?.close();
});

const KEY = 'io.toolmesh/idempotency-key';
const callIdOf = (r: { _meta?: Record<string, unknown> | undefined }) =>
  r._meta?.['io.toolmesh/tool-call-id'] as string;
const serverUrl = () => mesh.serverUrl(mesh.project.id, 'web');

describe('per-server endpoint', () => {
  it("lists the server's tools under its own names, input schemas as the server sent them", async () => {
    const client = await mesh.connect({ url: serverUrl() });
    const through = (await client.listTools()).tools;
    // Names that cannot become registry ids (over 64 characters) are refused at registration.
    const own = (await direct.listTools()).tools.filter((t) => t.name.length <= 64);
    expect(through.map((t) => t.name).sort()).toEqual(own.map((t) => t.name).sort());
    for (const t of own) {
      const seen = through.find((x) => x.name === t.name)!;
      expect(seen.inputSchema, t.name).toEqual(t.inputSchema);
      expect(seen.description).toBe(t.description);
    }
    expect(own.find((t) => t.name === 'echo')?.inputSchema['$schema']).toBeDefined();
  });

  it('calls a tool by its own name: the answer as sent, one card', async () => {
    const client = await mesh.connect({ url: serverUrl() });
    const res = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
    const own = await direct.callTool({ name: 'echo', arguments: { text: 'hi' } });
    expect(res.content).toEqual(own.content);
    expect(res.structuredContent).toEqual(own.structuredContent);
    const id = callIdOf(res);
    const e = await mesh.api.store.executions.get(mesh.project.id, id);
    expect(e).toMatchObject({ status: 'succeeded', tool_name: 'web.echo', channel: 'mcp' });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
    // A name that is not one of this server's is unknown here, the prefixed one too.
    await expect(client.callTool({ name: 'web__echo', arguments: {} })).rejects.toThrow(
      /unknown tool/,
    );
  });

  it("an isError result keeps the server's content blocks", async () => {
    const client = await mesh.connect({ url: serverUrl() });
    const res = await client.callTool({ name: 'fail', arguments: { why: 'on purpose' } });
    const own = await direct.callTool({ name: 'fail', arguments: { why: 'on purpose' } });
    expect(res.isError).toBe(true);
    expect(res.content).toEqual(own.content);
    expect(res.content).toEqual([{ type: 'text', text: 'it broke: on purpose' }]);
  });

  it("progress carries the server's own progress, total and message", async () => {
    const client = await mesh.connect({ url: serverUrl() });
    const seen: unknown[] = [];
    await client.callTool({ name: 'progress', arguments: { steps: 3 } }, undefined, {
      onprogress: (p) => void seen.push(p),
    });
    await expect.poll(() => seen.length).toBe(3);
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, total: 3, message: `step ${i}` })));
  });

  it('a re-sent call with the idempotency key is the same call', async () => {
    const key = `per-server-${Date.now()}`;
    const call = { name: 'echo', arguments: { text: 'once' }, _meta: { [KEY]: key } };
    const a = await (await mesh.connect({ url: serverUrl() })).callTool(call);
    const b = await (await mesh.connect({ url: serverUrl() })).callTool(call);
    expect(b).toEqual(a);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, callIdOf(a))).toBe(1);
  });

  it('runs a call as a durable task (2025-11-25)', async () => {
    const client = await mesh.connect({ url: serverUrl() });
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'echo', arguments: { text: 'task' }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
    );
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.content).toEqual([{ type: 'text', text: 'echo: task' }]);
    expect(await mesh.api.store.executions.get(mesh.project.id, task.taskId)).toMatchObject({
      tool_name: 'web.echo',
    });
  });

  it('serves the 2026-07-28 revision under the same names', async () => {
    const client = new ModernClient(
      { name: 'modern-test', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new ModernTransport(serverUrl(), {
        requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const names = (await client.listTools()).tools.map((t) => t.name);
      expect(names).toContain('echo');
      expect(names).not.toContain('web__echo');
      const res = await client.callTool({ name: 'fail', arguments: {} });
      expect(res).toMatchObject({
        isError: true,
        content: [{ type: 'text', text: 'it broke: no reason' }],
      });
      const seen: unknown[] = [];
      await client.callTool(
        { name: 'progress', arguments: { steps: 2 } },
        { onprogress: (p: unknown) => void seen.push(p) },
      );
      await expect.poll(() => seen.length).toBe(2);
      expect(seen).toEqual([1, 2].map((i) => ({ progress: i, total: 2, message: `step ${i}` })));
    } finally {
      await client.close();
    }
  });

  it("another project's key, server name or session reaches nothing", async () => {
    const init = {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    };
    const post = async (url: URL, key: string, session?: string) =>
      (
        await fetch(url, {
          method: 'POST',
          headers: {
            authorization: `Bearer ${key}`,
            'content-type': 'application/json',
            accept: 'application/json, text/event-stream',
            ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } : {}),
          },
          body: JSON.stringify(session ? { jsonrpc: '2.0', id: 2, method: 'tools/list' } : init),
        })
      ).status;
    // Another project's key on this project's server.
    expect(await post(serverUrl(), other.key)).toBe(404);
    // This project's key on the other project's server, named under either project.
    expect(await post(mesh.serverUrl(mesh.project.id, 'theirs'), mesh.project.key)).toBe(404);
    expect(await post(mesh.serverUrl(other.id, 'theirs'), mesh.project.key)).toBe(404);
    // The other project's own key names its server under this project: 404 too.
    expect(await post(mesh.serverUrl(mesh.project.id, 'theirs'), other.key)).toBe(404);
    // A session of the project's facade, or of the other project's server, is unknown here.
    const facade = await fetch(mesh.mcpUrl(mesh.project.id), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${mesh.project.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
      },
      body: JSON.stringify(init),
    });
    const session = facade.headers.get('mcp-session-id')!;
    expect(session).toBeTruthy();
    expect(await post(serverUrl(), mesh.project.key, session)).toBe(404);
    const theirs = await mesh.connect({
      url: mesh.serverUrl(other.id, 'theirs'),
      key: other.key,
    });
    expect((await theirs.listTools()).tools.map((t) => t.name)).toContain('echo');
    const theirSession = (theirs.transport as StreamableHTTPClientTransport).sessionId!;
    expect(await post(serverUrl(), mesh.project.key, theirSession)).toBe(404);
    // And the other project's calls are its own: no card of this project.
    const res = await theirs.callTool({ name: 'echo', arguments: { text: 'mine' } });
    expect(await mesh.api.store.executions.get(mesh.project.id, callIdOf(res))).toBeFalsy();
    expect(await mesh.api.store.executions.get(other.id, callIdOf(res))).toMatchObject({
      tool_name: 'theirs.echo',
    });
  });
});
