// The SDK as tenants use it: each project's calls go over a connection of its own, made with a
// bus credential of that project (as POST /v1/projects/:p/bus-credentials issues one), so a test
// that calls tools for several projects does so as several tenants, each held to its own
// subjects by the server. Connections are made on first use and closed by `close`.
import type { ConnectionOptions, NatsConnection } from '@nats-io/transport-node';
import { createClient, type Client } from '@toolmesh/client';
import { createSubjects } from '@toolmesh/protocol';
import type { TestNats } from '@toolmesh/testing';

export function createTenantClient(nats: TestNats, options: ConnectionOptions = {}): Client {
  const clients = new Map<string, Promise<{ nc: NatsConnection; client: Client }>>();
  const of = async (project: string): Promise<Client> => {
    let entry = clients.get(project);
    if (entry === undefined) {
      entry = nats.connectProject(project, options).then((nc) => ({
        nc,
        client: createClient({ nc, root: nats.root }),
      }));
      clients.set(project, entry);
      // A project no credential can be minted for (an invalid id) is refused as the SDK would
      // refuse it, and leaves nothing behind.
      void entry.catch(() => clients.delete(project));
    }
    return (await entry).client;
  };
  return {
    subjects: createSubjects(nats.root),
    publishToolCall: async (req) => (await of(req.project)).publishToolCall(req),
    callTool: async (req, opts) => (await of(req.project)).callTool(req, opts),
    cancel: async (req) => (await of(req.project)).cancel(req),
    close: async () => {
      for (const entry of clients.values()) {
        const { nc, client } = await entry;
        await client.close();
        if (!nc.isClosed()) await nc.close();
      }
      clients.clear();
    },
  };
}
