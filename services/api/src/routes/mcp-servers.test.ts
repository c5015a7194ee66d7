// The MCP server routes on their own: registration checks, listing, the answer when no tools
// service is running (the server is kept, in state error, with the reason), and tenancy. The
// discovery itself, done by the tools service, is covered in tests/tools-mcp.test.ts.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError, startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const httpServer = {
  name: 'docs',
  transport: 'http',
  url: 'https://mcp.example.com/mcp',
  headers: { 'X-Client': 'toolmesh' },
  auth: { type: 'bearer', secret: 'docs_token' },
};

it('registers servers of both transports; without a tools service they are in state error', async () => {
  const p = await api.createProject();
  const created = await api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
    key: p.key,
    body: httpServer,
  });
  expect(created.status, created.raw).toBe(201);
  expect(created.body).toMatchObject({
    name: 'docs',
    transport: 'http',
    url: 'https://mcp.example.com/mcp',
    header_names: ['X-Client'],
    auth: { type: 'bearer', secret: 'docs_token' },
    state: 'error',
    last_error: expect.stringContaining('no tools service answered'),
    tool_count: 0,
  });
  const stdio = await api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
    key: p.key,
    body: {
      name: 'files',
      transport: 'stdio',
      command: 'npx',
      args: ['-y', 'some-server'],
      env: { TOKEN: 'not shown' },
    },
  });
  expect(stdio.status, stdio.raw).toBe(201);
  expect(stdio.body).toMatchObject({
    name: 'files',
    transport: 'stdio',
    command: 'npx',
    args: ['-y', 'some-server'],
    env_names: ['TOKEN'],
  });
  expect(stdio.raw).not.toContain('not shown');

  const list = await api.request('GET', `/v1/projects/${p.id}/mcp-servers`, { key: p.key });
  expect(list.status).toBe(200);
  expect(list.body.mcp_servers.map((s: { name: string }) => s.name)).toEqual(['docs', 'files']);
  const one = await api.request('GET', `/v1/projects/${p.id}/mcp-servers/files`, { key: p.key });
  expect(one.body).toMatchObject({ name: 'files', state: 'error' });

  const again = await api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
    key: p.key,
    body: httpServer,
  });
  expectError(again, 409, 'conflict');
});

it('refuses reserved names, bad urls, a header auth without its header, unknown fields', async () => {
  const p = await api.createProject();
  const post = (body: unknown) =>
    api.request('POST', `/v1/projects/${p.id}/mcp-servers`, { key: p.key, body });
  expectError(await post({ ...httpServer, name: 'skills' }), 400, 'reserved_name');
  expectError(await post({ ...httpServer, name: 'has.dot' }), 400, 'invalid_request');
  expectError(await post({ ...httpServer, url: 'file:///etc/passwd' }), 400, 'invalid_request');
  expectError(
    await post({ ...httpServer, auth: { type: 'header', secret: 's' } }),
    400,
    'invalid_request',
  );
  expectError(await post({ ...httpServer, command: 'x' }), 400, 'invalid_request');
  expectError(await post({ name: 'x', transport: 'stdio' }), 400, 'invalid_request');
});

it("project B cannot see, refresh or delete project A's servers", async () => {
  // Another project's key is answered as if the project did not exist (404), as elsewhere.
  const a = await api.createProject();
  const b = await api.createProject();
  expect(
    (
      await api.request('POST', `/v1/projects/${a.id}/mcp-servers`, {
        key: a.key,
        body: httpServer,
      })
    ).status,
  ).toBe(201);
  const base = `/v1/projects/${a.id}/mcp-servers`;
  expectError(await api.request('GET', base, { key: b.key }), 404, 'not_found');
  expectError(await api.request('GET', `${base}/docs`, { key: b.key }), 404, 'not_found');
  expectError(await api.request('POST', `${base}/docs/refresh`, { key: b.key }), 404, 'not_found');
  expectError(await api.request('DELETE', `${base}/docs`, { key: b.key }), 404, 'not_found');
  expectError(
    await api.request('POST', base, { key: b.key, body: { ...httpServer, name: 'other' } }),
    404,
    'not_found',
  );
  // B's own namespace has no such server.
  const own = `/v1/projects/${b.id}/mcp-servers`;
  expectError(await api.request('GET', `${own}/docs`, { key: b.key }), 404, 'not_found');
  expectError(await api.request('POST', `${own}/docs/refresh`, { key: b.key }), 404, 'not_found');
  expectError(await api.request('DELETE', `${own}/docs`, { key: b.key }), 404, 'not_found');
  // A's server is untouched.
  const still = await api.request('GET', `${base}/docs`, { key: a.key });
  expect(still.status).toBe(200);
});

it('deletes a server', async () => {
  const p = await api.createProject();
  await api.request('POST', `/v1/projects/${p.id}/mcp-servers`, { key: p.key, body: httpServer });
  const del = await api.request('DELETE', `/v1/projects/${p.id}/mcp-servers/docs`, { key: p.key });
  expect(del.status, del.raw).toBe(204);
  expectError(
    await api.request('GET', `/v1/projects/${p.id}/mcp-servers/docs`, { key: p.key }),
    404,
    'not_found',
  );
});
