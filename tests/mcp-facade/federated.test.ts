// The project's facade serves its MCP servers' prompts and resources under prefixed names
// (`<server>__<prompt>`, `toolmesh://mcp-servers/<server>/<uri>`), on both revisions. A prefixed
// name of a server the project does not have is unknown, even when another project has it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import type { ToolsService } from '../../services/tools/src/app.ts';
import { startFacadeMeshWithTools, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let tools: ToolsService;
let other: { id: string; key: string };
beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  for (const [p, name] of [
    [mesh.project, 'everything'],
    [other, 'theirs'],
  ] as const) {
    const res = await mesh.api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
      key: p.key,
      body: { name, transport: 'http', url: fixture.url },
    });
    if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  }
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await fixture?.stop();
  await mesh?.close();
});

describe("the project's facade: its MCP servers' prompts and resources", () => {
  it('lists and gets prompts, lists and reads resources, under prefixed names (2025-11-25)', async () => {
    const client = await mesh.connect();
    const prompts = (await client.listPrompts()).prompts.map((p) => p.name);
    expect(prompts).toContain('everything__test_prompt_with_arguments');
    const got = await client.getPrompt({
      name: 'everything__test_prompt_with_arguments',
      arguments: { arg1: 'hello', arg2: 'world' },
    });
    expect(got.messages).toEqual([
      {
        role: 'user',
        content: { type: 'text', text: "Prompt with arguments: arg1='hello', arg2='world'" },
      },
    ]);
    const uri = 'toolmesh://mcp-servers/everything/test://static-text';
    expect((await client.listResources()).resources.map((r) => r.uri)).toContain(uri);
    expect((await client.listResourceTemplates()).resourceTemplates[0]?.uriTemplate).toBe(
      'toolmesh://mcp-servers/everything/test://template/{id}/data',
    );
    expect((await client.readResource({ uri })).contents).toEqual([
      { uri, mimeType: 'text/plain', text: 'This is the content of the static text resource.' },
    ]);
  });

  it('serves the same on 2026-07-28', async () => {
    const client = new ModernClient(
      { name: 'modern', version: '1.0.0' },
      { versionNegotiation: { mode: 'auto' } },
    );
    await client.connect(
      new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
        requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
      }),
    );
    try {
      expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
      const got = await client.getPrompt({ name: 'everything__test_simple_prompt' });
      expect(got.messages[0]?.content).toEqual({
        type: 'text',
        text: 'This is a simple prompt for testing.',
      });
      const read = await client.readResource({
        uri: 'toolmesh://mcp-servers/everything/test://template/7/data',
      });
      expect(read.contents[0]?.uri).toBe(
        'toolmesh://mcp-servers/everything/test://template/7/data',
      );
    } finally {
      await client.close();
    }
  });

  it("another project's server is unknown here, by prompt or by resource", async () => {
    const client = await mesh.connect();
    expect((await client.listPrompts()).prompts.map((p) => p.name)).not.toContain(
      'theirs__test_simple_prompt',
    );
    await expect(client.getPrompt({ name: 'theirs__test_simple_prompt' })).rejects.toThrow(
      /unknown prompt/,
    );
    await expect(
      client.readResource({ uri: 'toolmesh://mcp-servers/theirs/test://static-text' }),
    ).rejects.toThrow(/unknown resource/);
    // The other project reaches its own under its own name.
    const theirs = await mesh.connect({ key: other.key, project: other.id });
    expect((await theirs.getPrompt({ name: 'theirs__test_simple_prompt' })).messages).toHaveLength(
      1,
    );
  });
});
