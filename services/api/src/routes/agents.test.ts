// Agents and their tools over HTTP: create with a profile, list, get with attached tools,
// update, delete; attach, configure, list and detach tools; every refusal with its code; and
// another project's key refused without changing anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const params = { type: 'object', properties: { query: { type: 'string' } }, required: ['query'] };

/** A project with a profile `writer` and an external tool `web.search`. */
async function setup() {
  const p = await api.createProject();
  const base = `/v1/projects/${p.id}`;
  const profile = await api.request('POST', `${base}/profiles`, {
    key: p.key,
    body: { name: 'writer' },
  });
  expect(profile.status).toBe(201);
  const tool = await api.request('POST', `${base}/tools`, {
    key: p.key,
    body: {
      name: 'web.search',
      description: 'Search the web',
      category: 'web',
      parameters: params,
    },
  });
  expect(tool.status).toBe(201);
  return { ...p, base };
}

describe('agents', () => {
  it('creates, reads, lists, updates and deletes agents', async () => {
    const p = await setup();
    const url = `${p.base}/agents`;
    const res = await api.request('POST', url, {
      key: p.key,
      body: { id: 'ada', name: 'Ada', profile: 'writer' },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      id: 'ada',
      name: 'Ada',
      profile: 'writer',
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const bob = await api.request('POST', url, { key: p.key, body: { id: 'bob' } });
    expect(bob.body).toMatchObject({ id: 'bob', name: 'bob', profile: null }); // name defaults to the id

    const got = await api.request('GET', `${url}/ada`, { key: p.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual({ ...res.body, tools: [] });
    const ids = async (qs = '') =>
      (
        (await api.request('GET', `${url}${qs}`, { key: p.key })).body.agents as { id: string }[]
      ).map((a) => a.id);
    expect(await ids()).toEqual(['ada', 'bob']);
    expect(await ids('?profile=writer')).toEqual(['ada']);
    expect(await ids('?limit=1&after=ada')).toEqual(['bob']);

    const renamed = await api.request('PATCH', `${url}/ada`, {
      key: p.key,
      body: { name: 'Ada L.' },
    });
    expect(renamed.body).toMatchObject({ id: 'ada', name: 'Ada L.', profile: 'writer' });
    const moved = await api.request('PATCH', `${url}/bob`, {
      key: p.key,
      body: { profile: 'writer' },
    });
    expect(moved.body).toMatchObject({ id: 'bob', name: 'bob', profile: 'writer' });
    const cleared = await api.request('PATCH', `${url}/bob`, {
      key: p.key,
      body: { profile: null },
    });
    expect(cleared.body).toMatchObject({ profile: null });
    // A renamed profile is followed: agents point at it, not at its name.
    await api.request('PATCH', `${p.base}/profiles/writer`, {
      key: p.key,
      body: { name: 'author' },
    });
    expect((await api.request('GET', `${url}/ada`, { key: p.key })).body.profile).toBe('author');

    const del = await api.request('DELETE', `${url}/ada`, { key: p.key });
    expect(del.status).toBe(204);
    expect(del.raw).toBe('');
    expectError(await api.request('GET', `${url}/ada`, { key: p.key }), 404, 'not_found');
    expectError(await api.request('DELETE', `${url}/ada`, { key: p.key }), 404, 'not_found');
    expect(await ids()).toEqual(['bob']);
  });

  it('refuses a duplicate id, an unknown profile, unknown fields, bad ids and a missing key', async () => {
    const p = await setup();
    const url = `${p.base}/agents`;
    const post = (body: unknown) => api.request('POST', url, { key: p.key, body });
    expect((await post({ id: 'ada' })).status).toBe(201);
    expectError(await post({ id: 'ada', name: 'again' }), 409, 'conflict');
    const unknown = await post({ id: 'cy', profile: 'ghost' });
    expectError(unknown, 400, 'invalid_request');
    expect(unknown.body.error.message).toContain('"ghost"');
    expect(unknown.body.error.details).toEqual({ profile: 'ghost' });
    expectError(await api.request('GET', `${url}/cy`, { key: p.key }), 404, 'not_found'); // not created
    expectError(await post({ id: 'cy', model: 'x' }), 400, 'invalid_request');
    expectError(await post({ id: 'a.b' }), 400, 'invalid_request'); // would split a NATS subject
    expectError(await post({ id: 'x'.repeat(65) }), 400, 'invalid_request');
    expectError(await post({ id: 'cy', name: '' }), 400, 'invalid_request');

    const patch = (agent: string, body: unknown) =>
      api.request('PATCH', `${url}/${agent}`, { key: p.key, body });
    const badProfile = await patch('ada', { profile: 'ghost' });
    expectError(badProfile, 400, 'invalid_request');
    expect(badProfile.body.error.message).toContain('"ghost"');
    expect((await api.request('GET', `${url}/ada`, { key: p.key })).body.profile).toBeNull();
    expectError(await patch('nobody', { name: 'x' }), 404, 'not_found');
    expectError(await patch('ada', {}), 400, 'invalid_request');
    expectError(await patch('ada', { id: 'eve' }), 400, 'invalid_request');
    expectError(await patch('a.b', { name: 'x' }), 400, 'invalid_id');
    expectError(await api.request('GET', `${url}/a%20b`, { key: p.key }), 400, 'invalid_id');
    expectError(await api.request('GET', url), 401, 'unauthorized');
    expectError(await api.request('DELETE', `${url}/ada`), 401, 'unauthorized');
  });
});

describe('agent tools', () => {
  it('attaches tools with config, lists them, reconfigures and detaches', async () => {
    const p = await setup();
    await api.request('POST', `${p.base}/agents`, { key: p.key, body: { id: 'ada' } });
    const url = `${p.base}/agents/ada/tools`;
    const res = await api.request('POST', url, {
      key: p.key,
      body: { tool: 'web.search', config: { default_limit: 20 } },
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      name: 'web.search',
      description: 'Search the web',
      category: 'web',
      parameters: params,
      enabled: true,
      config: { default_limit: 20 },
      attached_at: expect.any(String),
    });
    const echo = await api.request('POST', url, { key: p.key, body: { tool: 'builtin.echo' } });
    expect(echo.body).toMatchObject({ name: 'builtin.echo', config: {} }); // reserved tools attach too

    const list = await api.request('GET', url, { key: p.key });
    expect(list.status).toBe(200);
    expect(list.body.tools.map((t: { name: string }) => t.name)).toEqual([
      'builtin.echo',
      'web.search',
    ]);
    expect(list.body.tools[1]).toEqual(res.body);
    const agent = await api.request('GET', `${p.base}/agents/ada`, { key: p.key });
    expect(agent.body.tools).toEqual(list.body.tools);

    const conf = await api.request('PATCH', `${url}/web.search`, {
      key: p.key,
      body: { config: { default_limit: 5 } },
    });
    expect(conf.status).toBe(200);
    expect(conf.body).toMatchObject({ name: 'web.search', config: { default_limit: 5 } });

    const del = await api.request('DELETE', `${url}/builtin.echo`, { key: p.key });
    expect(del.status).toBe(204);
    expect(
      (await api.request('GET', url, { key: p.key })).body.tools.map(
        (t: { name: string }) => t.name,
      ),
    ).toEqual(['web.search']);
    // Deleting a tool from the registry detaches it everywhere.
    expect((await api.request('DELETE', `${p.base}/tools/web.search`, { key: p.key })).status).toBe(
      204,
    );
    expect((await api.request('GET', url, { key: p.key })).body.tools).toEqual([]);
  });

  it('refuses an unknown tool (400), a missing agent (404), a second attach (409), and bad input', async () => {
    const p = await setup();
    await api.request('POST', `${p.base}/agents`, { key: p.key, body: { id: 'ada' } });
    const url = `${p.base}/agents/ada/tools`;
    const attach = (body: unknown, agent = 'ada') =>
      api.request('POST', `${p.base}/agents/${agent}/tools`, { key: p.key, body });
    expect((await attach({ tool: 'web.search' })).status).toBe(201);
    expectError(await attach({ tool: 'web.search', config: { a: 1 } }), 409, 'conflict');
    const unknown = await attach({ tool: 'web.ghost' });
    expectError(unknown, 400, 'invalid_request');
    expect(unknown.body.error.details).toEqual({ tool: 'web.ghost' });
    expectError(await attach({ tool: 'web.search' }, 'nobody'), 404, 'not_found');
    expectError(await attach({ tool: 'web.search' }, 'bad.id'), 400, 'invalid_id');
    expectError(await attach({ tool: 'nodot' }), 400, 'invalid_request');
    expectError(await attach({ tool: 'web.search', settings: {} }), 400, 'invalid_request');
    expectError(await attach({ tool: 'web.search', config: ['x'] }), 400, 'invalid_request');
    expectError(
      await attach({ tool: 'builtin.echo', config: { blob: 'x'.repeat(64 * 1024) } }),
      400,
      'invalid_request',
    );

    expectError(
      await api.request('GET', `${p.base}/agents/nobody/tools`, { key: p.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('PATCH', `${url}/builtin.echo`, { key: p.key, body: { config: {} } }),
      404,
      'not_found',
    );
    expectError(
      await api.request('PATCH', `${url}/web.search`, { key: p.key, body: {} }),
      400,
      'invalid_request',
    );
    const notAttached = await api.request('DELETE', `${url}/builtin.echo`, { key: p.key });
    expectError(notAttached, 404, 'not_found');
    expect(notAttached.body.error.message).toContain('not attached');
    expectError(
      await api.request('DELETE', `${p.base}/agents/nobody/tools/web.search`, { key: p.key }),
      404,
      'not_found',
    );
    expectError(await api.request('DELETE', `${url}/nodot`, { key: p.key }), 400, 'invalid_id');
    expectError(await api.request('GET', url), 401, 'unauthorized');
    const still = await api.request('GET', url, { key: p.key });
    expect(still.body.tools).toEqual([expect.objectContaining({ name: 'web.search', config: {} })]);
  });
});

it("another project's key gets 404 for every agent route and changes nothing", async () => {
  const a = await setup();
  const b = await setup(); // b has its own `writer` profile and `web.search` tool
  const base = `${a.base}/agents`;
  await api.request('POST', base, {
    key: a.key,
    body: { id: 'ada', name: 'Ada', profile: 'writer' },
  });
  await api.request('POST', `${base}/ada/tools`, {
    key: a.key,
    body: { tool: 'web.search', config: { n: 1 } },
  });
  const calls: [Parameters<TestApi['request']>[0], string, unknown?][] = [
    ['POST', base, { id: 'eve' }],
    ['GET', base],
    ['GET', `${base}/ada`],
    ['PATCH', `${base}/ada`, { name: 'hijacked' }],
    ['DELETE', `${base}/ada`],
    ['POST', `${base}/ada/tools`, { tool: 'builtin.echo' }],
    ['GET', `${base}/ada/tools`],
    ['PATCH', `${base}/ada/tools/web.search`, { config: { n: 2 } }],
    ['DELETE', `${base}/ada/tools/web.search`],
  ];
  for (const [method, url, body] of calls) {
    expectError(await api.request(method, url, { key: b.key, body }), 404, 'not_found');
  }
  const got = await api.request('GET', `${base}/ada`, { key: a.key });
  expect(got.body).toMatchObject({ id: 'ada', name: 'Ada', profile: 'writer' });
  expect(got.body.tools).toEqual([
    expect.objectContaining({ name: 'web.search', config: { n: 1 } }),
  ]);
  expect((await api.request('GET', base, { key: a.key })).body.agents).toHaveLength(1);
  // b's own agent list is empty, and b cannot reach a's agent through its own project either.
  expect((await api.request('GET', `${b.base}/agents`, { key: b.key })).body.agents).toEqual([]);
  expectError(await api.request('GET', `${b.base}/agents/ada`, { key: b.key }), 404, 'not_found');
});
