// Syncing an MCP server's discovery into the registry against a real Postgres: added, updated
// (description, schema, MCP name), vanished tools disabled and re-enabled when they return, a tool
// a user disabled left alone, names held by another tool refused, delete taking the tools along;
// with pinning, a changed definition held until approved, and one that reverts no longer held.
import { beforeAll, expect, it } from 'vitest';
import type { DiscoveredTool } from './mcp-servers.ts';
import type { Store } from '../store.ts';
import { useMigratedStore } from '../test-support.ts';

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
    held: [],
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
  expect(third).toMatchObject({ updated: ['docs.fetch'] });
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

it('with pinning, holds a changed definition until it is approved', async () => {
  await store.mcpServers.create(P, { name: 'pin', transport: 'http', url: 'https://x.test/mcp' });
  await store.mcpServers.sync(P, 'pin', [tool('a'), tool('b')], { pin: true });
  const pinned = await store.tools.get(P, 'pin.a');
  expect(pinned?.definition_hash).toMatch(/^[0-9a-f]{64}$/);
  expect(pinned?.pending_definition).toBeNull();

  // a's description and b's annotations change: both held, the approved text still in force.
  const changed = await store.mcpServers.sync(
    P,
    'pin',
    [
      tool('a', 'now with a hidden instruction'),
      { ...tool('b'), annotations: { readOnlyHint: false } },
    ],
    { pin: true },
  );
  expect(changed).toMatchObject({ updated: [], held: ['pin.a', 'pin.b'] });
  const held = await store.tools.get(P, 'pin.a');
  expect(held).toMatchObject({
    description: 'the a tool',
    definition_hash: pinned?.definition_hash,
    pending_definition: { description: 'now with a hidden instruction' },
  });

  // b's server goes back to the approved definition: no longer held.
  const reverted = await store.mcpServers.sync(
    P,
    'pin',
    [tool('a', 'now with a hidden instruction'), tool('b')],
    { pin: true },
  );
  expect(reverted).toMatchObject({ updated: ['pin.b'], held: [] });
  expect((await store.tools.get(P, 'pin.b'))?.pending_definition).toBeNull();

  // Approval: the pending definition becomes the tool's and its hash the pinned one.
  expect(await store.tools.approveDefinition(P, 'pin.a', 'f'.repeat(64))).toBe('stale');
  const approved = await store.tools.approveDefinition(P, 'pin.a', held?.pending_definition?.hash);
  expect(approved).toMatchObject({
    description: 'now with a hidden instruction',
    definition_hash: held?.pending_definition?.hash,
    pending_definition: null,
  });
  expect(await store.tools.approveDefinition(P, 'pin.a')).toBe('none');
  expect(await store.tools.approveDefinition(P, 'pin.none')).toBeUndefined();
  expect(await store.tools.approveDefinition('other-project', 'pin.a')).toBeUndefined();
});

it('without pinning, a changed definition applies at once and becomes the pinned one', async () => {
  await store.mcpServers.create(P, { name: 'free', transport: 'http', url: 'https://x.test/mcp' });
  await store.mcpServers.sync(P, 'free', [tool('a')]);
  const first = (await store.tools.get(P, 'free.a'))?.definition_hash;
  const out = await store.mcpServers.sync(P, 'free', [tool('a', 'changed')], { pin: false });
  expect(out).toMatchObject({ updated: ['free.a'], held: [] });
  const row = await store.tools.get(P, 'free.a');
  expect(row).toMatchObject({ description: 'changed', pending_definition: null });
  expect(row?.definition_hash).not.toBe(first);
  // Pinning switched on later pins the definition in force, not the one first seen.
  const later = await store.mcpServers.sync(P, 'free', [tool('a', 'changed')], { pin: true });
  expect(later).toMatchObject({ updated: [], held: [] });
});
