// Projects and API keys over HTTP: admin-only creation with a seeded tool registry, keys shown
// once and stored hashed, revocation, and the error shape of every refusal.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { hashKey } from '@toolmesh/store';
import { ADMIN_KEY, startTestApi, type TestApi, expectError } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('projects', () => {
  it('the admin creates a project, gets its first key, and the registry is seeded', async () => {
    const res = await api.request('POST', '/v1/projects', {
      key: ADMIN_KEY,
      body: { id: 'acme', name: 'Acme' },
    });
    expect(res.status).toBe(201);
    expect(res.body.project).toMatchObject({ id: 'acme', name: 'Acme' });
    expect(res.body.key.key).toMatch(/^tmk_/);
    const rows = await api.store.pool.query<{ key_hash: string }>(
      'SELECT key_hash FROM resource.api_keys WHERE project_id = $1',
      ['acme'],
    );
    expect(rows.rows).toEqual([{ key_hash: hashKey(res.body.key.key as string) }]); // only the hash is kept
    const tools = await api.store.tools.list('acme', {});
    const names = tools.map((t) => t.name);
    expect(names.filter((n) => n.startsWith('skills.'))).toHaveLength(12);
    expect(names).toEqual(
      expect.arrayContaining(['builtin.echo', 'builtin.sleep', 'skills.run_cmd']),
    );
    const got = await api.request('GET', '/v1/projects/acme', { key: res.body.key.key as string });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({ id: 'acme', name: 'Acme' });
  });

  it('generates an id when none is given', async () => {
    const res = await api.request('POST', '/v1/projects', {
      key: ADMIN_KEY,
      body: { name: 'anon' },
    });
    expect(res.status).toBe(201);
    expect(res.body.project.id).toMatch(/^p_[0-9a-f]{16}$/);
  });

  it('refuses a duplicate id, a bad id, unknown fields, a project key and no key', async () => {
    await api.createProject('dup');
    expectError(
      await api.request('POST', '/v1/projects', { key: ADMIN_KEY, body: { id: 'dup', name: 'x' } }),
      409,
      'conflict',
    );
    expectError(
      await api.request('POST', '/v1/projects', {
        key: ADMIN_KEY,
        body: { id: 'bad id!', name: 'x' },
      }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('POST', '/v1/projects', {
        key: ADMIN_KEY,
        body: { name: 'x', owner: 'me' },
      }),
      400,
      'invalid_request',
    );
    const { key } = await api.createProject();
    expectError(
      await api.request('POST', '/v1/projects', { key, body: { name: 'x' } }),
      401,
      'unauthorized',
    );
    expectError(
      await api.request('POST', '/v1/projects', { body: { name: 'x' } }),
      401,
      'unauthorized',
    );
    expectError(
      await api.request('GET', '/v1/projects', { key: 'tmk_not-a-key' }),
      401,
      'unauthorized',
    );
  });

  it('lists every project for the admin and only its own for a project key', async () => {
    const a = await api.createProject();
    const all = await api.request('GET', '/v1/projects?limit=500', { key: ADMIN_KEY });
    expect(all.body.projects.map((p: { id: string }) => p.id)).toContain(a.id);
    const own = await api.request('GET', '/v1/projects', { key: a.key });
    expect(own.body.projects.map((p: { id: string }) => p.id)).toEqual([a.id]);
  });

  it('a key of project A gets 404 for project B, exactly like a missing project', async () => {
    const a = await api.createProject();
    const b = await api.createProject();
    expectError(await api.request('GET', `/v1/projects/${b.id}`, { key: a.key }), 404, 'not_found');
    expectError(await api.request('GET', '/v1/projects/nope', { key: a.key }), 404, 'not_found');
    expectError(
      await api.request('GET', `/v1/projects/${b.id}/keys`, { key: a.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('POST', `/v1/projects/${b.id}/keys`, { key: a.key, body: { name: 'x' } }),
      404,
      'not_found',
    );
    expect((await api.store.projects.listKeys(b.id)).length).toBe(1);
  });

  it('a project id with characters outside [A-Za-z0-9_-] in the path is invalid_id', async () => {
    expectError(
      await api.request('GET', '/v1/projects/bad%24id', { key: ADMIN_KEY }),
      400,
      'invalid_id',
    );
  });
});

describe('api keys', () => {
  it('creates (shown once), lists (never shown again) and revokes keys', async () => {
    const p = await api.createProject();
    const created = await api.request('POST', `/v1/projects/${p.id}/keys`, {
      key: p.key,
      body: { name: 'ci' },
    });
    expect(created.status).toBe(201);
    const second = created.body.key as string;
    expect(second).toMatch(/^tmk_/);
    const list = await api.request('GET', `/v1/projects/${p.id}/keys`, { key: second });
    expect(list.body.keys.map((k: { name: string }) => k.name)).toEqual(['default', 'ci']);
    expect(JSON.stringify(list.body)).not.toContain(second);
    const revoked = await api.request(
      'DELETE',
      `/v1/projects/${p.id}/keys/${created.body.key_id}`,
      { key: p.key },
    );
    expect(revoked.status).toBe(204);
    expectError(
      await api.request('GET', `/v1/projects/${p.id}`, { key: second }),
      401,
      'unauthorized',
    );
    expectError(
      await api.request('DELETE', `/v1/projects/${p.id}/keys/${created.body.key_id}`, {
        key: p.key,
      }),
      404,
      'not_found',
    );
    expectError(
      await api.request('DELETE', `/v1/projects/${p.id}/keys/not-a-uuid`, { key: p.key }),
      400,
      'invalid_id',
    );
  });
});

describe('request hygiene', () => {
  it('malformed JSON, a body over the limit and a wrong content type each get their own code', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/keys`;
    const headers = { 'content-type': 'application/json' };
    expectError(
      await api.request('POST', url, { key: p.key, payload: '{"name": ', headers }),
      400,
      'malformed_json',
    );
    const big = JSON.stringify({ name: 'x'.repeat(api.config.api.body_limit_bytes + 10) });
    expectError(
      await api.request('POST', url, { key: p.key, payload: big, headers }),
      413,
      'payload_too_large',
    );
    expectError(
      await api.request('POST', url, {
        key: p.key,
        payload: '<name>x</name>',
        headers: { 'content-type': 'application/xml' },
      }),
      415,
      'unsupported_media_type',
    );
  });

  it('an unknown route is a 404 in the same shape', async () => {
    expectError(await api.request('GET', '/v1/nothing-here', { key: ADMIN_KEY }), 404, 'not_found');
  });
});

describe('health', () => {
  it('healthz, readyz and metrics answer without a key', async () => {
    expect((await api.request('GET', '/healthz')).body).toEqual({ status: 'ok' });
    const ready = await api.request('GET', '/readyz');
    expect(ready.status).toBe(200);
    expect(ready.body.checks).toEqual({ postgres: 'ok', nats: 'ok' });
    const metrics = await api.request('GET', '/metrics');
    expect(metrics.raw).toContain('toolmesh_api_requests_total');
  });
});

describe('an empty JSON body', () => {
  const post = (url: string, key: string) =>
    api.app.inject({
      method: 'POST',
      url,
      headers: { authorization: `Bearer ${key}`, 'content-type': 'application/json' },
      payload: '',
    });

  it('is read as {}: an optional body is fine, missing required fields are named', async () => {
    const p = await api.createProject();
    const cancel = await post(
      `/v1/projects/${p.id}/tasks/00000000-0000-7000-8000-000000000000/cancel`,
      p.key,
    );
    expect(cancel.statusCode, cancel.body).toBe(404);
    const tool = await post(`/v1/projects/${p.id}/tools`, p.key);
    expect(tool.statusCode).toBe(400);
    expect(tool.json()).toMatchObject({ error: { code: 'invalid_request' } });
    expect(tool.body).toContain('name');
  });

  it('is still refused when it is not JSON', async () => {
    const res = await api.app.inject({
      method: 'POST',
      url: '/v1/projects',
      headers: { authorization: `Bearer ${ADMIN_KEY}`, 'content-type': 'application/json' },
      payload: '{"id": ',
    });
    expect(res.statusCode).toBe(400);
  });
});
