// The 2026-07-28 revision through the 2.x client (@modelcontextprotocol/client) negotiating it
// with `server/discover`: stateless requests against the same facade; list results carry ttlMs
// and cacheScope; builtin.echo answered from its card; an idempotent re-send; progress; another
// project's key refused. The 2025-era client on the same URL still gets sessions (list.test.ts).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { addMcpFixture, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: Awaited<ReturnType<typeof addMcpFixture>>;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  fixture = await addMcpFixture(mesh);
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await fixture?.stop();
  await mesh?.close();
});

async function modern(key = mesh.project.key, project = mesh.project.id): Promise<Client> {
  const client = new Client(
    { name: 'modern-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(project), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

describe('the 2026-07-28 revision', () => {
  it('negotiates 2026-07-28 through server/discover', async () => {
    const client = await modern();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const discovered = client.getDiscoverResult();
    expect(discovered?.supportedVersions).toContain('2026-07-28');
    expect(discovered?.capabilities).toMatchObject({ tools: { listChanged: true } });
    expect(client.getServerVersion()?.name).toBe('toolmesh');
  });

  it('lists the tools with cache hints and calls builtin.echo statelessly', async () => {
    const client = await modern();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toContain('builtin__echo');
    expect(listed).toMatchObject({ ttlMs: 10_000, cacheScope: 'private' });
    const res = await client.callTool({ name: 'builtin__echo', arguments: { era: 'modern' } });
    expect(res.structuredContent).toEqual({ era: 'modern' });
  });

  it('answers a re-sent call with the same idempotency key from the same card', async () => {
    const client = await modern();
    const call = {
      name: 'builtin__sleep',
      arguments: { ms: 200 },
      _meta: { 'io.toolmesh/idempotency-key': `modern-${Date.now()}` },
    };
    const a = await client.callTool(call);
    const b = await (await modern()).callTool(call);
    const id = a._meta?.['io.toolmesh/tool-call-id'] as string;
    expect(b._meta?.['io.toolmesh/tool-call-id']).toBe(id);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
    expect((await mesh.api.store.executions.get(mesh.project.id, id))?.attempts).toBe(1);
  });

  it('sends progress notifications', async () => {
    const client = await modern();
    const seen: number[] = [];
    await client.callTool(
      { name: 'web__progress', arguments: { steps: 3 } },
      {
        onprogress: (p: { progress: number }) => void seen.push(p.progress),
      },
    );
    await expect.poll(() => seen.length).toBe(3);
  });

  it("refuses another project's key", async () => {
    const other = await mesh.api.createProject();
    await expect(modern(other.key)).rejects.toThrow();
  });
});
