// Changing the tool registry over HTTP: updates (reserved tools only switch on and off), deletion,
// and another project's key refused on every tool route without changing anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';
import { tool } from './tools-fixtures.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('update and delete', () => {
  it('updates the fields it is given and checks a new schema', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/tools/web.search`;
    await api.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: tool('web.search', { tags: ['a'] }),
    });
    const params = { type: 'object', properties: { url: { type: 'string', format: 'uri' } } };
    const res = await api.request('PATCH', url, {
      key: p.key,
      body: {
        description: 'Fetch one page',
        tags: ['b'],
        parameters: params,
        options: {},
        enabled: false,
      },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'web.search',
      description: 'Fetch one page',
      category: 'general',
      tags: ['b'],
      parameters: params,
      options: {},
      enabled: false,
    });
    expect(res.body.updated_at > res.body.created_at).toBe(true);
    const cat = await api.request('PATCH', url, { key: p.key, body: { category: 'web' } });
    expect(cat.body).toMatchObject({
      category: 'web',
      description: 'Fetch one page',
      enabled: false,
    });

    expectError(
      await api.request('PATCH', url, { key: p.key, body: { parameters: { type: 'objekt' } } }),
      400,
      'invalid_schema',
    );
    expectError(await api.request('PATCH', url, { key: p.key, body: {} }), 400, 'invalid_request');
    expectError(
      await api.request('PATCH', url, { key: p.key, body: { name: 'web.x' } }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('PATCH', `/v1/projects/${p.id}/tools/web.none`, {
        key: p.key,
        body: { enabled: true },
      }),
      404,
      'not_found',
    );
    expectError(
      await api.request('PATCH', `/v1/projects/${p.id}/tools/a.b.c`, {
        key: p.key,
        body: { enabled: true },
      }),
      400,
      'invalid_id',
    );
    const after = await api.request('GET', url, { key: p.key });
    expect(after.body.parameters).toEqual(params); // refused updates left it alone
  });

  it('reserved tools can be switched off and on, but not changed or deleted', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/tools/builtin.echo`;
    const off = await api.request('PATCH', url, { key: p.key, body: { enabled: false } });
    expect(off.status).toBe(200);
    expect(off.body).toMatchObject({
      name: 'builtin.echo',
      origin: 'builtin',
      reserved: true,
      enabled: false,
    });
    const change = await api.request('PATCH', url, {
      key: p.key,
      body: { enabled: true, description: 'mine' },
    });
    expectError(change, 400, 'reserved_name');
    expect(change.body.error.details).toEqual({ fields: ['description'] });
    expectError(
      await api.request('DELETE', `/v1/projects/${p.id}/tools/skills.run_cmd`, { key: p.key }),
      400,
      'reserved_name',
    );
    const got = await api.request('GET', url, { key: p.key });
    expect(got.body).toMatchObject({ enabled: false, description: off.body.description });
    expect(
      (await api.request('GET', `/v1/projects/${p.id}/tools/skills.run_cmd`, { key: p.key }))
        .status,
    ).toBe(200);
  });

  it('deletes an external tool', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/tools/web.search`;
    await api.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: tool('web.search'),
    });
    const res = await api.request('DELETE', url, { key: p.key });
    expect(res.status).toBe(204);
    expect(res.raw).toBe('');
    expectError(await api.request('GET', url, { key: p.key }), 404, 'not_found');
    expectError(await api.request('DELETE', url, { key: p.key }), 404, 'not_found');
    expectError(await api.request('DELETE', url), 401, 'unauthorized');
  });
});

it("another project's key gets 404 for every tool route and changes nothing", async () => {
  const a = await api.createProject();
  const b = await api.createProject();
  const base = `/v1/projects/${a.id}/tools`;
  await api.request('POST', base, { key: a.key, body: tool('web.search') });
  const calls: [Parameters<TestApi['request']>[0], string, unknown?][] = [
    ['POST', base, tool('web.fetch')],
    ['GET', base],
    ['GET', `${base}/web.search`],
    ['PATCH', `${base}/web.search`, { description: 'hijacked' }],
    ['PATCH', `${base}/builtin.echo`, { enabled: false }],
    ['DELETE', `${base}/web.search`],
  ];
  for (const [method, url, body] of calls) {
    expectError(await api.request(method, url, { key: b.key, body }), 404, 'not_found');
  }
  const list = await api.request('GET', `${base}?origin=external`, { key: a.key });
  expect(list.body.tools).toHaveLength(1);
  expect(list.body.tools[0]).toMatchObject({
    name: 'web.search',
    description: 'Search the web for pages about a query',
  });
  expect((await api.request('GET', `${base}/builtin.echo`, { key: a.key })).body.enabled).toBe(
    true,
  );
  expect(
    (await api.request('GET', `/v1/projects/${b.id}/tools?origin=external`, { key: b.key })).body
      .tools,
  ).toEqual([]);
});
