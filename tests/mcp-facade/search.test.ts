// Tool search: a project with 300 tools (past [api] mcp_search_threshold) is listed as two tools,
// search_tools and call_tool; a search finds tools with their schemas, call_tool runs one (and so
// does its own name), a project under the threshold lists its tools as they are.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { TOOL_CATALOG } from '@toolmesh/skills';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh({ CG__API__MCP_SEARCH_THRESHOLD: '100' });
  const added = await mesh.api.store.tools.seed(
    mesh.project.id,
    Array.from({ length: 300 - TOOL_CATALOG.length }, (_, i) => ({
      name: `weather${i}.forecast`,
      target: `weather${i}`,
      description: `Forecast for region ${i}${i === 42 ? ', with hail warnings' : ''}`,
      category: 'http',
      parameters: { type: 'object', properties: { day: { type: 'string' } } },
      origin: 'http' as const,
    })),
  );
  expect(added).toBe(300 - TOOL_CATALOG.length); // the seeded reserved tools make 300
});
afterAll(async () => mesh?.close());

describe('tool search', () => {
  it('lists search_tools and call_tool instead of 300 tools', async () => {
    expect((await mesh.api.store.tools.list(mesh.project.id, {})).length).toBe(300);
    const client = await mesh.connect();
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).toEqual(['search_tools', 'call_tool']);
  });

  it('finds tools by words of their name and description, with their schemas', async () => {
    const client = await mesh.connect();
    const res = await client.callTool({ name: 'search_tools', arguments: { query: 'hail' } });
    const found = (res.structuredContent as { tools: { name: string; inputSchema: unknown }[] })
      .tools;
    expect(found.map((t) => t.name)).toEqual(['weather42__forecast']);
    expect(found[0]?.inputSchema).toMatchObject({ properties: { day: { type: 'string' } } });
    const echo = await client.callTool({
      name: 'search_tools',
      arguments: { query: 'echo', limit: 3 },
    });
    expect((echo.structuredContent as { tools: { name: string }[] }).tools[0]?.name).toBe(
      'builtin__echo',
    );
  });

  it('runs a found tool through call_tool, and by its own name', async () => {
    const client = await mesh.connect();
    const via = await client.callTool({
      name: 'call_tool',
      arguments: { name: 'builtin__echo', arguments: { hi: 1 } },
    });
    expect(via.structuredContent).toEqual({ hi: 1 });
    const direct = await client.callTool({ name: 'builtin__echo', arguments: { hi: 2 } });
    expect(direct.structuredContent).toEqual({ hi: 2 });
    const err = await client
      .callTool({ name: 'call_tool', arguments: { name: 'nope__nothing' } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
  });

  it('lists the tools themselves under the threshold', async () => {
    const small = await mesh.api.createProject();
    const client = await mesh.connect({ project: small.id, key: small.key });
    const names = (await client.listTools()).tools.map((t) => t.name);
    expect(names).toContain('builtin__echo');
    expect(names).not.toContain('search_tools');
  });
});
