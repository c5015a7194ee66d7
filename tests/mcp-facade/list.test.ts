// tools/list over the facade: the project's enabled tools with MCP-safe names and their JSON
// Schemas; a disabled tool is not offered; a registry change is announced as list_changed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh({}, { skills: false });
});
afterAll(async () => mesh?.close());

describe('tools/list', () => {
  it('lists the enabled tools under names MCP clients accept, with their schemas', async () => {
    const client = await mesh.connect();
    expect(client.getServerVersion()?.name).toBe('toolmesh');
    expect(client.getServerCapabilities()?.tools).toEqual({ listChanged: true });
    const { tools } = await client.listTools();
    const registry = await mesh.api.store.tools.list(mesh.project.id, {});
    expect(tools.length).toBe(registry.length);
    for (const t of tools) expect(t.name).toMatch(/^[A-Za-z0-9_-]{1,64}$/);
    const echo = tools.find((t) => t.name === 'builtin__echo');
    expect(echo).toMatchObject({
      title: 'builtin.echo',
      description: expect.any(String),
      inputSchema: registry.find((r) => r.name === 'builtin.echo')!.parameters,
    });
    expect(tools.map((t) => t.name)).toContain('skills__run_cmd');
  });

  it('leaves out a disabled tool and announces the change', async () => {
    const client = await mesh.connect();
    const changed = new Promise<void>((resolve) =>
      client.setNotificationHandler(ToolListChangedNotificationSchema, () => resolve()),
    );
    // Give the client's notification stream (GET) a moment to open.
    await new Promise((r) => setTimeout(r, 200));
    const res = await mesh.api.request(
      'PATCH',
      `/v1/projects/${mesh.project.id}/tools/builtin.sleep`,
      { key: mesh.project.key, body: { enabled: false } },
    );
    expect(res.status, res.raw).toBe(200);
    await changed;
    const { tools } = await client.listTools();
    expect(tools.map((t) => t.name)).not.toContain('builtin__sleep');
    expect(tools.map((t) => t.name)).toContain('builtin__echo');
  });
});
