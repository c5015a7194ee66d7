// The OpenAPI document generated from the route schemas is a valid OpenAPI 3.1 document and
// describes every route a user can call.
import { Validator } from '@seriousme/openapi-schema-validator';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from './test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

it('validates against the OpenAPI 3.1 schema', async () => {
  const res = await api.request('GET', '/openapi.json');
  expect(res.status).toBe(200);
  const doc = res.body as { openapi: string; paths: Record<string, Record<string, unknown>> };
  expect(doc.openapi).toBe('3.1.0');
  const validator = new Validator();
  const result = await validator.validate(doc);
  expect(result.errors ?? []).toEqual([]);
  expect(result.valid).toBe(true);
  expect(validator.version).toBe('3.1');
});

it('lists every route registered under /v1, each with its error responses', async () => {
  const doc = (await api.request('GET', '/openapi.json')).body as {
    paths: Record<string, Record<string, { responses: Record<string, unknown> }>>;
  };
  const documented = new Set(
    Object.entries(doc.paths).flatMap(([path, ops]) =>
      Object.keys(ops).map((m) => `${m.toUpperCase()} ${path}`),
    ),
  );
  const routes = api.app
    .printRoutes({ commonPrefix: false })
    .split('\n')
    .filter((l) => l.includes('/v1/'));
  expect(routes.length).toBeGreaterThan(0);
  expect(documented).toContain('POST /v1/projects');
  expect(documented).toContain('POST /v1/projects/{project}/skills');
  for (const route of [
    'PUT /v1/projects/{project}/secrets/{name}',
    'GET /v1/projects/{project}/secrets',
    'DELETE /v1/projects/{project}/secrets/{name}',
    'POST /v1/projects/{project}/tools',
    'POST /v1/projects/{project}/agents/{agent}/threads',
    'GET /v1/projects/{project}/agents/{agent}/threads',
    'GET /v1/projects/{project}/agents/{agent}/threads/{thread_id}',
    'POST /v1/projects/{project}/agents/{agent}/threads/{thread_id}/messages',
    'POST /v1/projects/{project}/executions/{id}/rerun',
    'POST /v1/projects/{project}/mcp-servers/{name}/disable',
    'POST /v1/projects/{project}/mcp-servers/{name}/enable',
    'GET /v1/projects/{project}/settings',
    'PATCH /v1/projects/{project}/settings',
  ]) {
    expect(documented).toContain(route);
  }
  for (const [path, ops] of Object.entries(doc.paths)) {
    if (!path.startsWith('/v1/')) continue;
    for (const [method, op] of Object.entries(ops)) {
      expect(Object.keys(op.responses), `${method} ${path}`).toContain('401');
    }
  }
});
