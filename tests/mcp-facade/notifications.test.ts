// What a project's MCP server notifies reaches the 2025-era sessions that asked for it, on the
// server's own endpoint and on the project's facade (prefixed names): a subscribed resource's
// update, resource and prompt list changes, log messages at or above each session's own level,
// and a tool list change, which refreshes the registry first. One session's unsubscribe or log
// level changes nothing for another, and another project's sessions receive none of it (its own
// server, of the same name, notifies only them).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Client } from '@modelcontextprotocol/sdk/client/index.js';
import {
  LoggingMessageNotificationSchema,
  PromptListChangedNotificationSchema,
  ResourceListChangedNotificationSchema,
  ResourceUpdatedNotificationSchema,
  ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import type { ToolsService } from '../../services/tools/src/app.ts';
import { registerMcpServers, startFacadeMeshWithTools, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let ours: McpEverythingFixture;
let theirs: McpEverythingFixture;
let tools: ToolsService;
let other: { id: string; key: string };
beforeAll(async () => {
  ours = await startMcpEverythingServer();
  theirs = await startMcpEverythingServer();
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  // Both projects name their server `everything`: only the project tells the two apart.
  await registerMcpServers(mesh, 'everything', [
    [mesh.project, ours.url],
    [other, theirs.url],
  ]);
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await ours?.stop();
  await theirs?.stop();
  await mesh?.close();
});

const WATCHED = 'test://watched-resource';

/** A session and every notification it was sent, by method. */
async function session(o: { facade?: boolean; project?: { id: string; key: string } } = {}) {
  const p = o.project ?? mesh.project;
  const client = await mesh.connect({
    key: p.key,
    url: o.facade ? mesh.mcpUrl(p.id) : mesh.serverUrl(p.id, 'everything'),
  });
  const seen: { method: string; params: Record<string, unknown> }[] = [];
  for (const schema of [
    ResourceUpdatedNotificationSchema,
    ResourceListChangedNotificationSchema,
    PromptListChangedNotificationSchema,
    LoggingMessageNotificationSchema,
    ToolListChangedNotificationSchema,
  ]) {
    client.setNotificationHandler(schema, (n) => {
      seen.push({ method: n.method, params: n.params ?? {} });
    });
  }
  // The session's GET stream is where notifications outside requests arrive: it opens after
  // initialize; a ping answered means the transport is up, and the stream has had its chance.
  await client.ping();
  await new Promise((r) => setTimeout(r, 200));
  const of = (method: string) => seen.filter((n) => n.method === method).map((n) => n.params);
  return { client, seen, of };
}

/**
 * Waits until each session got a prompts/list_changed sent after everything before it: the
 * mesh passes one server's notifications on in order, so what a session did not get by then it
 * will not get.
 */
async function settle(
  fixture: McpEverythingFixture,
  ...sessions: Awaited<ReturnType<typeof session>>[]
) {
  const before = sessions.map((s) => s.of('notifications/prompts/list_changed').length);
  await fixture.triggers.promptsChanged();
  for (const [i, s] of sessions.entries()) {
    await expect
      .poll(() => s.of('notifications/prompts/list_changed').length, { timeout: 15_000 })
      .toBe(before[i]! + 1);
  }
}

const close = async (...ss: { client: Client }[]) => {
  for (const s of ss) await s.client.close().catch(() => undefined);
};

describe("an MCP server's notifications (2025-era sessions)", () => {
  it('a subscribed resource update reaches the sessions that subscribed, and only them', async () => {
    const a = await session();
    const b = await session();
    const quiet = await session();
    const stranger = await session({ project: other });
    try {
      await a.client.subscribeResource({ uri: WATCHED });
      await b.client.subscribeResource({ uri: WATCHED });
      await stranger.client.subscribeResource({ uri: WATCHED });
      expect(ours.state.subscriptions.has(WATCHED)).toBe(true);
      await ours.triggers.resourceUpdated(WATCHED);
      await settle(ours, a, b, quiet);
      expect(a.of('notifications/resources/updated')).toEqual([{ uri: WATCHED }]);
      expect(b.of('notifications/resources/updated')).toEqual([{ uri: WATCHED }]);
      expect(quiet.of('notifications/resources/updated')).toEqual([]);

      // One session's unsubscribe leaves the other's subscription on the server.
      await a.client.unsubscribeResource({ uri: WATCHED });
      expect(ours.state.subscriptions.has(WATCHED)).toBe(true);
      await ours.triggers.resourceUpdated(WATCHED);
      await settle(ours, a, b);
      expect(a.of('notifications/resources/updated')).toHaveLength(1);
      expect(b.of('notifications/resources/updated')).toHaveLength(2);
      // The last holder's unsubscribe reaches the server.
      await b.client.unsubscribeResource({ uri: WATCHED });
      expect(ours.state.subscriptions.has(WATCHED)).toBe(false);

      // The other project's session, subscribed to the same URI of its own `everything`, heard
      // none of ours; its own server's update does reach it.
      expect(stranger.of('notifications/resources/updated')).toEqual([]);
      expect(stranger.of('notifications/prompts/list_changed')).toEqual([]);
      await theirs.triggers.resourceUpdated(WATCHED);
      await expect
        .poll(() => stranger.of('notifications/resources/updated'), { timeout: 15_000 })
        .toEqual([{ uri: WATCHED }]);
    } finally {
      await close(a, b, quiet, stranger);
    }
  });

  it('resource and prompt list changes reach every session of the project', async () => {
    const a = await session();
    const stranger = await session({ project: other });
    try {
      await ours.triggers.resourcesChanged();
      await settle(ours, a);
      expect(a.of('notifications/resources/list_changed')).toHaveLength(1);
      await settle(theirs, stranger);
      expect(stranger.of('notifications/resources/list_changed')).toEqual([]);
      expect(stranger.of('notifications/prompts/list_changed')).toHaveLength(1);
    } finally {
      await close(a, stranger);
    }
  });

  it("each session gets the server's log messages at or above its own level", async () => {
    const debug = await session();
    const unset = await session();
    const errors = await session();
    const stranger = await session({ project: other });
    try {
      // The server says "Log level set to" at info each time: `errors` is set before it does.
      await errors.client.setLoggingLevel('error');
      await debug.client.setLoggingLevel('debug');
      await stranger.client.setLoggingLevel('debug');
      await ours.triggers.log('debug', 'd1');
      await ours.triggers.log('info', 'i1');
      await ours.triggers.log('error', 'e1');
      await settle(ours, debug, unset, errors);
      const data = (s: { of: (m: string) => Record<string, unknown>[] }) =>
        s.of('notifications/message').map((p) => p['data']);
      // The server's own message when the level was set comes first ("Log level set to").
      expect(data(debug).filter((d) => !String(d).startsWith('Log level'))).toEqual([
        'd1',
        'i1',
        'e1',
      ]);
      expect(data(unset).filter((d) => !String(d).startsWith('Log level'))).toEqual(['i1', 'e1']);
      expect(data(errors)).toEqual(['e1']);
      expect(debug.of('notifications/message').at(-1)).toEqual({
        level: 'error',
        logger: 'conformance-test-server',
        data: 'e1',
      });
      await settle(theirs, stranger);
      expect(data(stranger).filter((d) => !String(d).startsWith('Log level'))).toEqual([]);
    } finally {
      await close(debug, unset, errors, stranger);
    }
  });

  it("a call's log messages go to its caller at its level", async () => {
    const unset = await session();
    const quiet = await session();
    try {
      await quiet.client.setLoggingLevel('warning');
      for (const s of [unset, quiet]) {
        await s.client.callTool({ name: 'test_tool_with_logging', arguments: {} });
      }
      const data = (s: typeof unset) =>
        s
          .of('notifications/message')
          .map((p) => p['data'])
          .filter((d) => !String(d).startsWith('Log level'));
      expect(data(unset)).toEqual([
        'Tool execution started',
        'Tool processing data',
        'Tool execution completed',
      ]);
      expect(data(quiet)).toEqual([]);
    } finally {
      await close(unset, quiet);
    }
  });

  it("the project's facade passes them on under prefixed names", async () => {
    const uri = `toolmesh://mcp-servers/everything/${WATCHED}`;
    const f = await session({ facade: true });
    const stranger = await session({ facade: true, project: other });
    try {
      await f.client.subscribeResource({ uri });
      await stranger.client.subscribeResource({ uri });
      await f.client.setLoggingLevel('info');
      await ours.triggers.resourceUpdated(WATCHED);
      await ours.triggers.log('warning', 'w1');
      await settle(ours, f);
      expect(f.of('notifications/resources/updated')).toEqual([{ uri }]);
      expect(f.of('notifications/message').at(-1)).toEqual({
        level: 'warning',
        logger: 'everything__conformance-test-server',
        data: 'w1',
      });
      await settle(theirs, stranger);
      expect(stranger.of('notifications/resources/updated')).toEqual([]);
      // A resource of a server the project does not have cannot be subscribed to.
      await expect(
        f.client.subscribeResource({ uri: 'toolmesh://mcp-servers/nope/test://x' }),
      ).rejects.toThrow(/unknown resource/);
      await f.client.unsubscribeResource({ uri });
      await stranger.client.unsubscribeResource({ uri });
    } finally {
      await close(f, stranger);
    }
  });

  it("the server's tools/list_changed refreshes the registry, then reaches the sessions", async () => {
    const a = await session();
    const f = await session({ facade: true });
    try {
      await ours.triggers.addTool('added_tool');
      await expect
        .poll(() => a.of('notifications/tools/list_changed').length, { timeout: 20_000 })
        .toBeGreaterThan(0);
      expect((await a.client.listTools()).tools.map((t) => t.name)).toContain('added_tool');
      await expect
        .poll(() => f.of('notifications/tools/list_changed').length, { timeout: 20_000 })
        .toBeGreaterThan(0);
      expect((await f.client.listTools()).tools.map((t) => t.name)).toContain(
        'everything__added_tool',
      );
      const res = await a.client.callTool({ name: 'added_tool', arguments: {} });
      expect(res.content).toEqual([{ type: 'text', text: 'added: added_tool' }]);
    } finally {
      await close(a, f);
    }
  });
});
