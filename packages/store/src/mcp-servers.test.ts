// Syncing an MCP server's discovery into the registry against a real Postgres: added, updated
// (description, schema, MCP name), vanished tools disabled and re-enabled when they return, a tool
// a user disabled left alone, names held by another tool refused, delete taking the tools along.
import { beforeAll, expect, it } from 'vitest';
import type { DiscoveredTool } from './mcp-servers.ts';
import type { Store } from './store.ts';
import { useMigratedStore } from './test-support.ts';

const P = 'proj';

const fixture = useMigratedStore([P]);
let store: Store;
beforeAll(() => {
  store = fixture.store;
});

const tool = (token: string, description = `the ${token} tool`): DiscoveredTool => ({
  token,
  mcpName: token,
  description,
  parameters: { type: 'object', properties: { q: { type: 'string' } } },
});

it('adds, updates, disables and re-enables the tools of a server', async () => {
  await store.mcpServers.create(P, { name: 'docs', transport: 'http', url: 'https://x.test/mcp' });
  // Another origin already holds docs.taken: the server may not take it over.
  await store.tools.create(P, {
    name: 'docs.taken',
    target: 'docs',
    description: 'an http tool',
    category: 'general',
    parameters: { type: 'object' },
    origin: 'http',
  });
  const first = await store.mcpServers.sync(P, 'docs', [
    tool('search'),
    tool('fetch'),
    tool('manual'),
    tool('taken'),
  ]);
  expect(first).toEqual({
    added: ['docs.search', 'docs.fetch', 'docs.manual'],
    updated: [],
    disabled: [],
    refused: ['docs.taken'],
    toolCount: 3,
  });
  expect(await store.tools.get(P, 'docs.search')).toMatchObject({
    origin: 'mcp',
    target: 'docs',
    enabled: true,
    spec: { server: 'docs', tool: 'search' },
  });
  expect((await store.tools.get(P, 'docs.taken'))?.origin).toBe('http');
  expect(await store.mcpServers.get(P, 'docs')).toMatchObject({
    state: 'connected',
    tool_count: 3,
  });

  // The same listing again changes nothing; a user switches docs.manual off.
  await store.tools.update(P, 'docs.manual', { enabled: false });
  const same = await store.mcpServers.sync(P, 'docs', [
    tool('search'),
    tool('fetch'),
    tool('manual'),
  ]);
  expect(same).toMatchObject({ added: [], updated: [], disabled: [] });

  // fetch vanishes, search changes its description, manual vanishes (already off: left alone).
  const second = await store.mcpServers.sync(P, 'docs', [tool('search', 'better search')]);
  expect(second).toMatchObject({ added: [], updated: ['docs.search'], disabled: ['docs.fetch'] });
  expect((await store.tools.get(P, 'docs.fetch'))?.enabled).toBe(false);

  // Both come back: the vanished one is enabled again, the one switched off by hand is not.
  const third = await store.mcpServers.sync(P, 'docs', [
    tool('search', 'better search'),
    tool('fetch'),
    tool('manual'),
  ]);
  expect(third?.updated).toEqual(['docs.fetch']);
  expect((await store.tools.get(P, 'docs.fetch'))?.enabled).toBe(true);
  expect((await store.tools.get(P, 'docs.manual'))?.enabled).toBe(false);
});

it('records a failed discovery, and delete removes the server with its tools only', async () => {
  await store.mcpServers.create(P, {
    name: 'srv',
    transport: 'stdio',
    command: 'node',
    args: ['s.js'],
  });
  expect(await store.mcpServers.recordError(P, 'srv', 'boom')).toMatchObject({
    state: 'error',
    last_error: 'boom',
  });
  await store.mcpServers.sync(P, 'srv', [tool('a'), tool('b')]);
  expect(await store.mcpServers.get(P, 'srv')).toMatchObject({
    state: 'connected',
    last_error: null,
  });
  expect(await store.mcpServers.delete(P, 'srv')).toEqual(
    expect.arrayContaining(['srv.a', 'srv.b']),
  );
  expect(await store.tools.get(P, 'srv.a')).toBeUndefined();
  expect(await store.tools.get(P, 'docs.search')).toBeDefined();
  expect(await store.mcpServers.delete(P, 'srv')).toBeUndefined();
  expect(await store.mcpServers.sync(P, 'srv', [tool('a')])).toBeUndefined();
});
