// List changes on the 2026-07-28 revision: a 2.x client opens `subscriptions/listen` for tool list
// changes, a tool registered over HTTP reaches it as notifications/tools/list_changed and shows
// up in its next tools/list; a listener of another project hears nothing of it. An MCP server's
// own changes reach the listeners of its endpoint and of the project's facade (prefixed): the
// resources a listen names are subscribed to on the server while it is open, their updates and
// the server's resource and prompt list changes arrive; another project's listener, on its own
// server of the same name, hears none of them.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { loadConfig } from '@toolmesh/config';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { registerMcpServers, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

async function modern(key: string, project: string, url?: URL): Promise<Client> {
  const client = new Client(
    { name: 'listen-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(url ?? mesh.mcpUrl(project), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

/** Counts the tools/list_changed notifications a client gets on its listen stream. */
async function listen(
  client: Client,
): Promise<{ count: () => number; close: () => Promise<void> }> {
  let n = 0;
  client.setNotificationHandler('notifications/tools/list_changed', () => {
    n += 1;
  });
  const sub = await client.listen({ toolsListChanged: true });
  return { count: () => n, close: () => sub.close() };
}

describe('2026-07-28 list changes (subscriptions/listen)', () => {
  it('a tool registered over HTTP reaches a subscribed client, and only its project', async () => {
    const other = await mesh.api.createProject();
    const ours = await listen(await modern(mesh.project.key, mesh.project.id));
    const theirs = await listen(await modern(other.key, other.id));
    try {
      const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/tools`, {
        key: mesh.project.key,
        body: {
          name: 'crm.lookup',
          description: 'Looks a customer up',
          parameters: { type: 'object', properties: { id: { type: 'string' } } },
        },
      });
      expect(res.status, res.raw).toBe(201);
      await expect.poll(() => ours.count(), { timeout: 10_000 }).toBe(1);
      const listed = await (await modern(mesh.project.key, mesh.project.id)).listTools();
      expect(listed.tools.map((t) => t.name)).toContain('crm__lookup');
      // The other project's stream stays quiet, though a change of its own does arrive.
      await new Promise((r) => setTimeout(r, 500));
      expect(theirs.count()).toBe(0);
      const own = await mesh.api.request('POST', `/v1/projects/${other.id}/tools`, {
        key: other.key,
        body: { name: 'crm.own', description: 'Theirs', parameters: { type: 'object' } },
      });
      expect(own.status, own.raw).toBe(201);
      await expect.poll(() => theirs.count(), { timeout: 10_000 }).toBe(1);
      expect(ours.count()).toBe(1);
    } finally {
      await ours.close();
      await theirs.close();
    }
  });
});

describe("2026-07-28: an MCP server's changes (subscriptions/listen)", () => {
  const WATCHED = 'test://watched-resource';
  let ours: McpEverythingFixture;
  let theirs: McpEverythingFixture;
  let tools: ToolsService;
  let other: { id: string; key: string };
  beforeAll(async () => {
    ours = await startMcpEverythingServer();
    theirs = await startMcpEverythingServer();
    tools = await startToolsService(
      loadConfig({ env: mesh.api.serviceEnv('tools') }),
      pino({ level: mesh.api.config.log.level }),
    );
    other = await mesh.api.createProject();
    await registerMcpServers(mesh, 'everything', [
      [mesh.project, ours.url],
      [other, theirs.url],
    ]);
  }, 120_000);
  afterAll(async () => {
    await tools?.stop(1_000);
    await ours?.stop();
    await theirs?.stop();
  });

  /** A listen on an endpoint for one resource and both list changes, and what it was sent. */
  async function watch(p: { id: string; key: string }, uri: string, facade = false) {
    const client = await modern(
      p.key,
      p.id,
      facade ? mesh.mcpUrl(p.id) : mesh.serverUrl(p.id, 'everything'),
    );
    const seen: { method: string; uri?: unknown }[] = [];
    for (const method of [
      'notifications/resources/updated',
      'notifications/resources/list_changed',
      'notifications/prompts/list_changed',
    ] as const) {
      client.setNotificationHandler(method, (n) => {
        seen.push({ method, ...(n.params && 'uri' in n.params ? { uri: n.params.uri } : {}) });
      });
    }
    const sub = await client.listen({
      resourceSubscriptions: [uri],
      resourcesListChanged: true,
      promptsListChanged: true,
    });
    const of = (method: string) => seen.filter((n) => n.method === method);
    return { of, close: () => sub.close() };
  }

  it("the server's endpoint: a named resource is watched while the listen is open", async () => {
    const a = await watch(mesh.project, WATCHED);
    const stranger = await watch(other, WATCHED);
    try {
      await expect
        .poll(() => ours.state.subscriptions.has(WATCHED), { timeout: 15_000 })
        .toBe(true);
      await expect
        .poll(() => theirs.state.subscriptions.has(WATCHED), { timeout: 15_000 })
        .toBe(true);
      await ours.triggers.resourceUpdated(WATCHED);
      await ours.triggers.resourcesChanged();
      await ours.triggers.promptsChanged();
      // One server's notifications arrive in order: the last one says the others are in.
      await expect
        .poll(() => a.of('notifications/prompts/list_changed').length, { timeout: 15_000 })
        .toBe(1);
      expect(a.of('notifications/resources/updated')).toEqual([
        { method: 'notifications/resources/updated', uri: WATCHED },
      ]);
      expect(a.of('notifications/resources/list_changed')).toHaveLength(1);
      // The other project's listener heard nothing of ours; its own server's change arrives.
      await theirs.triggers.promptsChanged();
      await expect
        .poll(() => stranger.of('notifications/prompts/list_changed').length, { timeout: 15_000 })
        .toBe(1);
      expect(stranger.of('notifications/resources/updated')).toEqual([]);
      expect(stranger.of('notifications/resources/list_changed')).toEqual([]);
    } finally {
      await a.close();
      await stranger.close();
    }
    // Closed: the server's subscription ends with it.
    await expect.poll(() => ours.state.subscriptions.has(WATCHED), { timeout: 15_000 }).toBe(false);
  });

  it("the project's facade: the same under prefixed names", async () => {
    const uri = `toolmesh://mcp-servers/everything/${WATCHED}`;
    const f = await watch(mesh.project, uri, true);
    const stranger = await watch(other, uri, true);
    try {
      await expect
        .poll(() => ours.state.subscriptions.has(WATCHED), { timeout: 15_000 })
        .toBe(true);
      await ours.triggers.resourceUpdated(WATCHED);
      await ours.triggers.promptsChanged();
      await expect
        .poll(() => f.of('notifications/prompts/list_changed').length, { timeout: 15_000 })
        .toBe(1);
      expect(f.of('notifications/resources/updated')).toEqual([
        { method: 'notifications/resources/updated', uri },
      ]);
      await theirs.triggers.promptsChanged();
      await expect
        .poll(() => stranger.of('notifications/prompts/list_changed').length, { timeout: 15_000 })
        .toBe(1);
      expect(stranger.of('notifications/resources/updated')).toEqual([]);
    } finally {
      await f.close();
      await stranger.close();
    }
  });
});
