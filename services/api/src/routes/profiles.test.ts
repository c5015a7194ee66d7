// Profiles over HTTP: create with tool patterns and internal tools, list, get, update (rename,
// clear the model), delete refused while an agent uses the profile, and another project's key
// refused without changing anything.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

const researcher = {
  name: 'researcher',
  allowed_tools: ['skills.*', 'web.search', 'skills.*'],
  allowed_internal_tools: ['submit_result'],
  model: 'gpt-4o-mini',
  system_prompt: 'You research things.',
};

describe('profiles', () => {
  it('creates, reads and lists profiles', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/profiles`;
    const res = await api.request('POST', url, { key: p.key, body: researcher });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      ...researcher,
      allowed_tools: ['skills.*', 'web.search'], // duplicates dropped, order kept
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const bare = await api.request('POST', url, { key: p.key, body: { name: 'bare' } });
    expect(bare.body).toMatchObject({
      name: 'bare',
      allowed_tools: [],
      allowed_internal_tools: [],
      model: null,
      system_prompt: '',
    });
    const got = await api.request('GET', `${url}/researcher`, { key: p.key });
    expect(got.status).toBe(200);
    expect(got.body).toEqual(res.body);
    const list = await api.request('GET', url, { key: p.key });
    expect(list.body.profiles.map((x: { name: string }) => x.name)).toEqual(['bare', 'researcher']);
    const page = await api.request('GET', `${url}?limit=1&after=bare`, { key: p.key });
    expect(page.body.profiles.map((x: { name: string }) => x.name)).toEqual(['researcher']);
  });

  it('refuses a duplicate, unknown fields and internal tools, bad patterns, an oversized prompt, a bad id', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/profiles`;
    const post = (body: unknown) => api.request('POST', url, { key: p.key, body });
    expect((await post(researcher)).status).toBe(201);
    expectError(await post(researcher), 409, 'conflict');
    expectError(await post({ name: 'x', temperature: 0.2 }), 400, 'invalid_request');
    const internal = await post({
      name: 'x',
      allowed_internal_tools: ['submit_result', 'format_disk'],
    });
    expectError(internal, 400, 'invalid_request');
    expect(internal.body.error.details.issues[0].path).toBe('/allowed_internal_tools/1');
    for (const pattern of ['skills', 'skills.*.*', '*.run_cmd', 'skills.run*', '*']) {
      expectError(await post({ name: 'x', allowed_tools: [pattern] }), 400, 'invalid_request');
    }
    expectError(await post({ name: 'bad name' }), 400, 'invalid_request');
    // 100 KiB counts bytes: 34,134 three-byte characters are 102,402 bytes but few code units.
    expectError(
      await post({ name: 'x', system_prompt: '€'.repeat(34_134) }),
      400,
      'invalid_request',
    );
    expect((await post({ name: 'x', system_prompt: '€'.repeat(34_133) })).status).toBe(201);
    expectError(await api.request('GET', `${url}/bad$name`, { key: p.key }), 400, 'invalid_id');
    expectError(await api.request('GET', `${url}/nobody`, { key: p.key }), 404, 'not_found');
    expectError(await api.request('GET', url), 401, 'unauthorized');
    expectError(await api.request('POST', url, { body: researcher }), 401, 'unauthorized');
  });

  it('updates fields, clears the model, renames, and refuses a taken name', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/profiles`;
    await api.request('POST', url, { key: p.key, body: researcher });
    await api.request('POST', url, { key: p.key, body: { name: 'other' } });
    const res = await api.request('PATCH', `${url}/researcher`, {
      key: p.key,
      body: { allowed_tools: ['web.*'], model: null, system_prompt: 'Be brief.' },
    });
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      name: 'researcher',
      allowed_tools: ['web.*'],
      allowed_internal_tools: ['submit_result'],
      model: null,
      system_prompt: 'Be brief.',
    });
    expectError(
      await api.request('PATCH', `${url}/researcher`, { key: p.key, body: { name: 'other' } }),
      409,
      'conflict',
    );
    const renamed = await api.request('PATCH', `${url}/researcher`, {
      key: p.key,
      body: { name: 'analyst', model: 'm2' },
    });
    expect(renamed.body).toMatchObject({
      name: 'analyst',
      model: 'm2',
      system_prompt: 'Be brief.',
    });
    expectError(await api.request('GET', `${url}/researcher`, { key: p.key }), 404, 'not_found');
    expectError(
      await api.request('PATCH', `${url}/researcher`, { key: p.key, body: { model: 'x' } }),
      404,
      'not_found',
    );
    expectError(
      await api.request('PATCH', `${url}/analyst`, { key: p.key, body: {} }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('PATCH', `${url}/analyst`, { key: p.key, body: { agents: [] } }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('PATCH', `${url}/bad.name`, { key: p.key, body: { model: 'x' } }),
      400,
      'invalid_id',
    );
  });

  it('deletes a profile no agent uses, and names the agents that still use one', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/profiles`;
    await api.request('POST', url, { key: p.key, body: researcher });
    const agent = await api.request('POST', `/v1/projects/${p.id}/agents`, {
      key: p.key,
      body: { id: 'ada', profile: 'researcher' },
    });
    expect(agent.status).toBe(201);
    const inUse = await api.request('DELETE', `${url}/researcher`, { key: p.key });
    expectError(inUse, 409, 'conflict');
    expect(inUse.body.error.details).toEqual({ agents: ['ada'] });
    expect((await api.request('GET', `${url}/researcher`, { key: p.key })).status).toBe(200);

    await api.request('PATCH', `/v1/projects/${p.id}/agents/ada`, {
      key: p.key,
      body: { profile: null },
    });
    const res = await api.request('DELETE', `${url}/researcher`, { key: p.key });
    expect(res.status).toBe(204);
    expect(res.raw).toBe('');
    expectError(await api.request('GET', `${url}/researcher`, { key: p.key }), 404, 'not_found');
    expectError(await api.request('DELETE', `${url}/researcher`, { key: p.key }), 404, 'not_found');
  });
});

it("another project's key gets 404 for every profile route and changes nothing", async () => {
  const a = await api.createProject();
  const b = await api.createProject();
  const base = `/v1/projects/${a.id}/profiles`;
  await api.request('POST', base, { key: a.key, body: researcher });
  const calls: [Parameters<TestApi['request']>[0], string, unknown?][] = [
    ['POST', base, { name: 'intruder' }],
    ['GET', base],
    ['GET', `${base}/researcher`],
    ['PATCH', `${base}/researcher`, { system_prompt: 'hijacked' }],
    ['DELETE', `${base}/researcher`],
  ];
  for (const [method, url, body] of calls) {
    expectError(await api.request(method, url, { key: b.key, body }), 404, 'not_found');
  }
  const list = await api.request('GET', base, { key: a.key });
  expect(list.body.profiles).toHaveLength(1);
  expect(list.body.profiles[0]).toMatchObject({
    name: 'researcher',
    system_prompt: 'You research things.',
  });
  // The same name is free in b: profiles are per project.
  expect(
    (await api.request('POST', `/v1/projects/${b.id}/profiles`, { key: b.key, body: researcher }))
      .status,
  ).toBe(201);
});
