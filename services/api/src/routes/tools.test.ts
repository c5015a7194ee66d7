// Registering tools over HTTP: ajv-checked parameter schemas, defaults, reserved names and every
// refusal. Search and usage are in tools-search.test.ts, updates, deletion and another
// project's key in tools-update.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';
import { searchParams, tool } from './tools-fixtures.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

describe('register', () => {
  it('registers an external tool with defaults and returns it', async () => {
    const p = await api.createProject();
    const res = await api.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: tool('web.search', {
        tags: ['net', 'read-only', 'net'],
        options: { timeout_ms: 20_000 },
      }),
    });
    expect(res.status).toBe(201);
    expect(res.body).toEqual({
      name: 'web.search',
      target: 'web',
      description: 'Search the web for pages about a query',
      category: 'general',
      tags: ['net', 'read-only'],
      parameters: searchParams,
      options: { timeout_ms: 20_000 },
      origin: 'external',
      annotations: {},
      output_schema: null,
      reserved: false,
      enabled: true,
      version: null,
      deprecated: false,
      deprecation_message: null,
      pending_definition: null,
      created_at: expect.any(String),
      updated_at: expect.any(String),
    });
    const got = await api.request('GET', `/v1/projects/${p.id}/tools/web.search`, { key: p.key });
    expect(got.status).toBe(200);
    expect(got.body).toMatchObject({
      name: 'web.search',
      category: 'general',
      options: { timeout_ms: 20_000 },
    });
  });

  it('accepts draft 2020-12 schemas with $defs, $ref, formats and untyped nested schemas', async () => {
    const p = await api.createProject();
    const parameters = {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      $id: 'urn:example:mail',
      type: 'object',
      $defs: { address: { type: 'string', format: 'email' } },
      properties: {
        to: { type: 'array', items: { $ref: '#/$defs/address' }, minItems: 1 },
        body: { description: 'anything', examples: ['hi'] },
      },
      required: ['to'],
    };
    for (const name of ['mail.send', 'mail.draft']) {
      // The same $id in two tools: each schema is checked on its own.
      const res = await api.request('POST', `/v1/projects/${p.id}/tools`, {
        key: p.key,
        body: tool(name, { parameters }),
      });
      expect(res.status).toBe(201);
      expect(res.body.parameters).toEqual(parameters);
    }
  });

  it('refuses reserved targets in any case: skills, builtin and sys', async () => {
    const p = await api.createProject();
    for (const name of [
      'skills.run_cmd',
      'skills.mine',
      'builtin.echo',
      'Skills.load',
      'sys.cancel',
      'SYS.reboot',
    ]) {
      const res = await api.request('POST', `/v1/projects/${p.id}/tools`, {
        key: p.key,
        body: tool(name),
      });
      expectError(res, 400, 'reserved_name');
      expect(res.body.error.message).toContain(name);
    }
    const reserved = await api.request('GET', `/v1/projects/${p.id}/tools/skills.run_cmd`, {
      key: p.key,
    });
    expect(reserved.body).toMatchObject({ origin: 'skills', reserved: true }); // the seeded one is untouched
  });

  it('refuses schemas ajv rejects, with its errors in details', async () => {
    const p = await api.createProject();
    const post = (parameters: unknown) =>
      api.request('POST', `/v1/projects/${p.id}/tools`, {
        key: p.key,
        body: tool('web.search', { parameters }),
      });

    const badType = await post({ type: 'object', properties: { q: { type: 'strin' } } });
    expectError(badType, 400, 'invalid_schema');
    expect(badType.body.error.details.issues).toEqual(
      expect.arrayContaining([expect.objectContaining({ path: '/properties/q/type' })]),
    );
    const typo = await post({ type: 'object', properties: {}, requried: ['q'] });
    expectError(typo, 400, 'invalid_schema');
    expect(typo.body.error.message).toContain('requried');
    const format = await post({
      type: 'object',
      properties: { at: { type: 'string', format: 'timestampz' } },
    });
    expectError(format, 400, 'invalid_schema');
    expect(format.body.error.message).toContain('timestampz');
    const draft7 = await post({
      $schema: 'http://json-schema.org/draft-07/schema#',
      type: 'object',
    });
    expectError(draft7, 400, 'invalid_schema');
    expect(draft7.body.error.message).toContain('meta-schema');
    const regex = await post({
      type: 'object',
      properties: { a: { type: 'string', pattern: '([' } },
    });
    expectError(regex, 400, 'invalid_schema');
    expect(regex.body.error.message).toContain('regular expression');
    expectError(
      await post({ type: 'object', properties: { a: { $ref: '#/$defs/none' } } }),
      400,
      'invalid_schema',
    );
    const remote = await post({
      type: 'object',
      properties: { x: { $ref: 'https://example.com/x.json' } },
    });
    expectError(remote, 400, 'invalid_schema');
    const notObject = await post({ type: 'string' });
    expectError(notObject, 400, 'invalid_schema');
    expect(notObject.body.error.message).toContain('object');
    expectError(await post({ properties: {} }), 400, 'invalid_schema');
    expectError(await post([{ type: 'object' }]), 400, 'invalid_request');
    expect(
      (await api.request('GET', `/v1/projects/${p.id}/tools/web.search`, { key: p.key })).status,
    ).toBe(404);
  });

  it('refuses duplicates, unknown fields, bad names and options, bad JSON and a missing key', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/tools`;
    expect((await api.request('POST', url, { key: p.key, body: tool('web.search') })).status).toBe(
      201,
    );
    expectError(
      await api.request('POST', url, { key: p.key, body: tool('web.search') }),
      409,
      'conflict',
    );
    expectError(
      await api.request('POST', url, { key: p.key, body: tool('web.fetch', { handler: 'x' }) }),
      400,
      'invalid_request',
    );
    for (const name of ['search', 'web.search.deep', 'web.', 'we b.search']) {
      expectError(
        await api.request('POST', url, { key: p.key, body: tool(name) }),
        400,
        'invalid_request',
      );
    }
    const opts = (options: unknown) =>
      api.request('POST', url, { key: p.key, body: tool('web.fetch', { options }) });
    expectError(await opts({ timeout_ms: 0 }), 400, 'invalid_request');
    expectError(await opts({ timeout_ms: 3_600_001 }), 400, 'invalid_request');
    expectError(await opts({ retries: 3 }), 400, 'invalid_request');
    expectError(
      await api.request('POST', url, {
        key: p.key,
        body: tool('web.fetch', { tags: ['has space'] }),
      }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('POST', url, {
        key: p.key,
        body: { name: 'web.fetch', parameters: searchParams },
      }),
      400,
      'invalid_request',
    );
    expectError(
      await api.request('POST', url, {
        key: p.key,
        payload: '{"name": ',
        headers: { 'content-type': 'application/json' },
      }),
      400,
      'malformed_json',
    );
    expectError(await api.request('POST', url, { body: tool('web.fetch') }), 401, 'unauthorized');
    expectError(
      await api.request('POST', '/v1/projects/bad$id/tools', {
        key: p.key,
        body: tool('web.fetch'),
      }),
      400,
      'invalid_id',
    );
  });
});
