// The MCP facade under test: the api listening on a real port with a skills service (it serves
// builtin.*) on the same NATS root and database, and real SDK clients connected over streamable
// HTTP with a project's key.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type { JsonRpcResponse } from '@modelcontextprotocol/ext-tasks/client';
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import { pino } from 'pino';
import { loadConfig } from '@toolmesh/config';
import { startMcpHttpServer, type McpHttpFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';

export interface FacadeMesh extends SkillsMesh {
  /** http://127.0.0.1:<port> of the api. */
  baseUrl: string;
  /** The facade URL of a project. */
  mcpUrl(project: string, query?: string): URL;
  /** The endpoint of one MCP server of a project. */
  serverUrl(project: string, server: string): URL;
  /** An SDK client connected (initialized) with a key; to `url` when given. */
  connect(o?: { key?: string; project?: string; query?: string; url?: URL }): Promise<Client>;
}

export async function startFacadeMesh(
  overrides: Record<string, string> = {},
  o: { skills?: boolean } = {},
): Promise<FacadeMesh> {
  const mesh = await startSkillsMesh(overrides);
  if (o.skills !== false) await mesh.startSkills();
  const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
  const clients: Client[] = [];
  const mcpUrl = (project: string, query?: string) =>
    new URL(`${address}/v1/projects/${project}/mcp${query ? `?${query}` : ''}`);
  return {
    ...mesh,
    baseUrl: address,
    mcpUrl,
    serverUrl: (project, server) =>
      new URL(`${address}/v1/projects/${project}/mcp-servers/${server}/mcp`),
    connect: async (c = {}) => {
      const client = new Client({ name: 'facade-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(
        c.url ?? mcpUrl(c.project ?? mesh.project.id, c.query),
        { requestInit: { headers: { authorization: `Bearer ${c.key ?? mesh.project.key}` } } },
      );
      await client.connect(transport);
      clients.push(client);
      return client;
    },
    close: async () => {
      for (const c of clients) await c.close().catch(() => undefined);
      await mesh.close();
    },
  };
}

/**
 * A facade mesh whose tools service (its own, beside it) may reach MCP servers on 127.0.0.1, and
 * a second project: the start of every test that registers fixture servers of its own.
 */
export async function startFacadeMeshWithTools(): Promise<{
  mesh: FacadeMesh;
  tools: ToolsService;
  other: { id: string; key: string };
}> {
  const mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  const tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: mesh.api.config.log.level }),
  );
  const other = await mesh.api.createProject();
  return { mesh, tools, other };
}

/**
 * The tools service beside the mesh and the SDK fixture server registered as the project's MCP
 * server `web` (its tools: web.progress reports progress, web.hang waits for its cancel).
 */
export async function addMcpFixture(mesh: FacadeMesh): Promise<{
  fixture: McpHttpFixture;
  tools: ToolsService;
  stop(): Promise<void>;
}> {
  const tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: mesh.api.config.log.level }),
  );
  const fixture = await startMcpHttpServer({ announce: false });
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/mcp-servers`, {
    key: mesh.project.key,
    body: { name: 'web', transport: 'http', url: fixture.url },
  });
  if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  return {
    fixture,
    tools,
    stop: async () => {
      await tools.stop(1_000);
      await fixture.stop();
    },
  };
}

/**
 * A raw 2026-07-28 JSON-RPC exchange over HTTP, in the shape the ext-tasks requester's
 * `rawDispatch` takes: the request as the requester framed it (its `_meta` envelope), the
 * revision's headers, and the answer read from a JSON body or an SSE stream.
 */
export function modernDispatch(url: URL, key: string) {
  let next = 0;
  return async (
    request: unknown,
    options: { signal?: AbortSignal; context?: { headers?: Record<string, string> } } = {},
  ): Promise<JsonRpcResponse> => {
    const req = request as { method: string; params?: Record<string, unknown> };
    const id = `raw-${++next}`;
    const name = req.method === 'tools/call' ? req.params?.['name'] : undefined;
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        authorization: `Bearer ${key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': req.method,
        ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
        ...options.context?.headers,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id, ...req }),
      ...(options.signal ? { signal: options.signal } : {}),
    });
    const text = await res.text();
    const messages = (res.headers.get('content-type') ?? '').includes('text/event-stream')
      ? text
          .split('\n')
          .filter((l) => l.startsWith('data:'))
          .map((l) => JSON.parse(l.slice(5)) as Record<string, unknown>)
      : [JSON.parse(text) as Record<string, unknown>];
    const answer = messages.find((m) => m['id'] === id) ?? messages.at(-1);
    if (!answer) throw new Error(`no answer to ${req.method}: HTTP ${res.status} ${text}`);
    if (answer['error']) {
      return { kind: 'error', error: answer['error'] as { code: number; message: string } };
    }
    return { kind: 'result', result: answer['result'] as JsonValue };
  };
}

/** Registers an HTTP MCP server as `name` in each project, failing the setup if one is refused. */
export async function registerMcpServers(
  mesh: FacadeMesh,
  name: string,
  servers: readonly (readonly [{ id: string; key: string }, string])[],
): Promise<void> {
  for (const [p, url] of servers) {
    const res = await mesh.api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
      key: p.key,
      body: { name, transport: 'http', url },
    });
    if (res.status !== 201) throw new Error(`registering ${name} failed: ${res.raw}`);
  }
}
