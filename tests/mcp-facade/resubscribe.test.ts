// A pooled connection lost under its subscriptions: the MCP server goes away (its sessions and
// everything they were told die with it) and comes back on the same address. The tools service
// opens the connection again by itself, because a client still holds a subscription, and tells
// the new server the subscriptions and log level its clients hold; a session that subscribed
// before the loss hears the next update without subscribing again. And a connection idle past
// [tools] mcp_idle_close_ms (small here) is kept while a client holds a subscription on it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';
import { loadConfig } from '@toolmesh/config';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { registerMcpServers, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let upstream: McpEverythingFixture;
let tools: ToolsService;
beforeAll(async () => {
  upstream = await startMcpEverythingServer();
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools', { CG__TOOLS__MCP_IDLE_CLOSE_MS: '300' }) }),
    pino({ level: mesh.api.config.log.level }),
  );
  await registerMcpServers(mesh, 'everything', [[mesh.project, upstream.url]]);
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await upstream?.stop();
  await mesh?.close();
});

const WATCHED = 'test://watched-resource';

describe('a lost pooled connection keeps its subscriptions', () => {
  it('the server, back on its address, is subscribed again and the session hears its update', async () => {
    const client: Client = await mesh.connect({
      url: mesh.serverUrl(mesh.project.id, 'everything'),
    });
    const updates: unknown[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params);
    });
    await client.subscribeResource({ uri: WATCHED });
    await client.setLoggingLevel('warning');
    expect(upstream.state.subscriptions.has(WATCHED)).toBe(true);

    // The server dies with every session it had, and a fresh one (nothing subscribed) takes its
    // address.
    const port = new URL(upstream.url).port;
    await upstream.stop();
    upstream = await startMcpEverythingServer({ port: Number(port) });
    expect(upstream.state.subscriptions.has(WATCHED)).toBe(false);

    // Nobody calls anything: the tools service reopens the connection for the subscription.
    await expect
      .poll(() => upstream.state.subscriptions.has(WATCHED), { timeout: 30_000 })
      .toBe(true);
    expect(upstream.methods).toContain('logging/setLevel');
    await upstream.triggers.resourceUpdated(WATCHED);
    await expect.poll(() => updates, { timeout: 15_000 }).toEqual([{ uri: WATCHED }]);

    // The subscription is still the session's to end, on the new connection.
    await client.unsubscribeResource({ uri: WATCHED });
    expect(upstream.state.subscriptions.has(WATCHED)).toBe(false);
  });

  it('the idle sweep keeps a connection a client holds a subscription on', async () => {
    const client: Client = await mesh.connect({
      url: mesh.serverUrl(mesh.project.id, 'everything'),
    });
    const updates: unknown[] = [];
    client.setNotificationHandler(ResourceUpdatedNotificationSchema, (n) => {
      updates.push(n.params);
    });
    await client.subscribeResource({ uri: WATCHED });
    const opened = upstream.methods.filter((m) => m === 'initialize').length;
    // Several idle periods pass without a call.
    await new Promise((r) => setTimeout(r, 1_500));
    await upstream.triggers.resourceUpdated(WATCHED);
    await expect.poll(() => updates, { timeout: 15_000 }).toEqual([{ uri: WATCHED }]);
    // The same connection carried it: none was opened meanwhile.
    expect(upstream.methods.filter((m) => m === 'initialize')).toHaveLength(opened);
    await client.unsubscribeResource({ uri: WATCHED });
  });
});
