// The mesh for the bus red-team tests, on the authenticated NATS every test runs on: the api
// (holding the account keys), a skills service and an agent worker, each as its own NATS user;
// two projects; the admin user's connection for checks; and a tenant of the first project
// connected with a bus credential the api issued (over HTTP, as users get one), with its SDK
// client.
import { expect } from 'vitest';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { createClient, credsConnectOptions, type Client } from '@toolmesh/client';
import type { TestNats } from '@toolmesh/testing';
import { startAgentMesh, type AgentMesh } from './agent-mesh.ts';
import { startUpstream, type Upstream } from './upstream.ts';

/** What POST /v1/projects/:p/bus-credentials answers. */
export interface Issued {
  id: string;
  creds: string;
  seed: string;
  jwt: string;
  inbox_prefix: string;
  public_key: string;
}

export interface BusMesh {
  root: string;
  nats: TestNats;
  mesh: AgentMesh;
  /** A local HTTP upstream for registry tools. */
  up: Upstream;
  /** A connection as the admin user, for checks the tenant may not make. */
  admin: NatsConnection;
  a: { id: string; key: string };
  b: { id: string; key: string };
  tenant: { cred: Issued; nc: NatsConnection; client: Client };
  issue(project: string, key: string, name?: string): Promise<Issued>;
  /** A connection as a project credential, the way the SDK and the CLI make it. */
  connectWith(creds: string, reconnect?: boolean): Promise<NatsConnection>;
  /** The tenant's own echo call over the SDK, end to end: the services still serve. */
  stillServing(): Promise<void>;
  close(): Promise<void>;
}

export async function startBusMesh(): Promise<BusMesh> {
  const up = await startUpstream();
  const mesh = await startAgentMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  const nats = mesh.api.nats;
  const root = nats.root;
  // Every service its own user; none of them but the api holds the account's keys.
  await mesh.startSkills();
  await mesh.startWorker();
  const admin = mesh.nc;
  const a = mesh.project;
  const b = await mesh.api.createProject();

  const opened: NatsConnection[] = [];
  const issue = async (project: string, key: string, name = 'publisher'): Promise<Issued> => {
    const res = await mesh.api.request('POST', `/v1/projects/${project}/bus-credentials`, {
      key,
      body: { name },
    });
    expect(res.status, res.raw).toBe(201);
    return res.body as Issued;
  };
  const connectWith = async (creds: string, reconnect = true) => {
    const nc = await connect({
      servers: nats.url,
      timeout: 5_000,
      ...(await credsConnectOptions(creds)),
      reconnect,
    });
    opened.push(nc);
    return nc;
  };

  const cred = await issue(a.id, a.key, 'sdk');
  const nc = await connectWith(cred.creds);
  const tenant = { cred, nc, client: createClient({ nc, root }) };
  return {
    root,
    nats,
    mesh,
    up,
    admin,
    a,
    b,
    tenant,
    issue,
    connectWith,
    stillServing: async () => {
      const r = await tenant.client.callTool(
        { project: a.id, channel: 'main', tool: 'builtin.echo', arguments: { text: 'alive' } },
        { waitMs: 30_000 },
      );
      expect(r.status, JSON.stringify(r)).toBe('succeeded');
      expect(r.content.result).toEqual({ text: 'alive' });
    },
    close: async () => {
      await tenant.client.close();
      for (const nc of opened) if (!nc.isClosed()) await nc.close();
      await mesh.close();
      await up.close();
    },
  };
}
