// `?agent=<id>` limits the facade's tools to that agent's tool set, as its worker sees it: the
// tools its profile admits and, once tools are attached to it, only those. A call outside the set
// is an unknown tool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
const post = (path: string, body: unknown) =>
  mesh.api.request('POST', `/v1/projects/${mesh.project.id}${path}`, {
    key: mesh.project.key,
    body,
  });

beforeAll(async () => {
  mesh = await startFacadeMesh();
  expect((await post('/profiles', { name: 'diag', allowed_tools: ['builtin.*'] })).status).toBe(
    201,
  );
  expect((await post('/agents', { id: 'bot', profile: 'diag' })).status).toBe(201);
  expect((await post('/agents', { id: 'bare' })).status).toBe(201);
});
afterAll(async () => mesh?.close());

const names = async (query: string) =>
  (await (await mesh.connect({ query })).listTools()).tools.map((t) => t.name).sort();

describe('an agent-limited list', () => {
  it("offers the tools the agent's profile admits", async () => {
    expect(await names('agent=bot')).toEqual([
      'builtin__echo',
      'builtin__execute_python',
      'builtin__get_document',
      'builtin__list_files',
      'builtin__read_file',
      'builtin__search_documents',
      'builtin__sleep',
      'builtin__write_file',
    ]);
  });

  it('narrows to the attached tools once there are any, and calls only those', async () => {
    expect((await post('/agents/bot/tools', { tool: 'builtin.echo' })).status).toBe(201);
    const client = await mesh.connect({ query: 'agent=bot' });
    expect((await client.listTools()).tools.map((t) => t.name)).toEqual(['builtin__echo']);
    const ok = await client.callTool({ name: 'builtin__echo', arguments: { a: 1 } });
    expect(ok.structuredContent).toEqual({ a: 1 });
    const err = await client
      .callTool({ name: 'builtin__sleep', arguments: { ms: 1 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
  });

  it('offers nothing to an agent without a profile, everything without an agent', async () => {
    expect(await names('agent=bare')).toEqual([]);
    expect((await names('')).length).toBeGreaterThan(2);
  });
});
