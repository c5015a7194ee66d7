// The MCP facade under test: the api listening on a real port with a skills service (it serves
// builtin.*) on the same NATS root and database, and real SDK clients connected over streamable
// HTTP with a project's key.
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
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
  /** An SDK client connected (initialized) with a key. */
  connect(o?: { key?: string; project?: string; query?: string }): Promise<Client>;
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
    connect: async (c = {}) => {
      const client = new Client({ name: 'facade-test', version: '1.0.0' });
      const transport = new StreamableHTTPClientTransport(
        mcpUrl(c.project ?? mesh.project.id, c.query),
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
 * The tools service beside the mesh and the SDK fixture server registered as the project's MCP
 * server `web` (its tools: web.progress reports progress, web.hang waits for its cancel).
 */
export async function addMcpFixture(mesh: FacadeMesh): Promise<{
  fixture: McpHttpFixture;
  tools: ToolsService;
  stop(): Promise<void>;
}> {
  const tools = await startToolsService(
    loadConfig({ env: mesh.api.env }),
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
