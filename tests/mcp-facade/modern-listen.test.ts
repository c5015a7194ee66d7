// List changes on the 2026-07-28 revision: a 2.x client opens `subscriptions/listen` for tool list
// changes, a tool registered over HTTP reaches it as notifications/tools/list_changed and shows
// up in its next tools/list; a listener of another project hears nothing of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh({}, { skills: false });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

async function modern(key: string, project: string): Promise<Client> {
  const client = new Client(
    { name: 'listen-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(project), {
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
