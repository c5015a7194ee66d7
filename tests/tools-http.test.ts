// HTTP tools of the registry, run by the tools service against a real local HTTP server: URL,
// query and body mapping, auth from each kind of secret, upstream errors, retries (429 with
// Retry-After, exhausted), deadline and cancel aborting the request, oversize responses,
// egress refusals, the registry on the bus path (unknown, disabled, deleted, invalid arguments),
// costs in the metrics, and secrets that never show up in cards, logs or api answers, nor
// cross from one project to another.
import { randomUUID } from 'node:crypto';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { createNames, decodeMessage } from '@toolmesh/protocol';
import { freePort } from '@toolmesh/testing';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@toolmesh/client';
import { expectError } from '../services/api/src/test/support.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { newSecretsKey, startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

const SECRET = `s3cr3t-${randomUUID()}`;
const BASIC = `alice:pw-${randomUUID()}`;

let mesh: ToolsMesh;
let up: Upstream;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  up = await startUpstream();
  mesh = await startToolsMesh({
    CG__SECRETS__KEY: newSecretsKey(),
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__MAX_RESULT_BYTES: '8192',
  });
  a = await mesh.api.createProject();
  b = await mesh.api.createProject();
  for (const [name, value] of [
    ['token', SECRET],
    ['basic', BASIC],
  ] as const) {
    const res = await mesh.request('PUT', `/v1/projects/${a.id}/secrets/${name}`, {
      key: a.key,
      body: { value },
    });
    expect(res.status, res.raw).toBe(201);
  }
});
afterAll(async () => {
  await mesh?.close();
  await up?.close();
});

const params = (properties: Record<string, unknown>, required: string[] = []) => ({
  type: 'object',
  properties,
  required,
  additionalProperties: false,
});

async function register(
  project: { id: string; key: string },
  name: string,
  http: Record<string, unknown>,
  extra: Record<string, unknown> = {},
) {
  const res = await mesh.request('POST', `/v1/projects/${project.id}/tools`, {
    key: project.key,
    body: {
      name,
      description: `the ${name} tool`,
      parameters: params({}),
      kind: 'http',
      http,
      ...extra,
    },
  });
  expect(res.status, res.raw).toBe(201);
  return res.body as Record<string, unknown>;
}

const call = (
  tool: string,
  args: Record<string, unknown> = {},
  project = a,
  o: { timeoutMs?: number; toolCallId?: string } = {},
): Promise<ToolResult> =>
  mesh.client.callTool(
    {
      project: project.id,
      channel: 'test',
      tool,
      arguments: args,
      ...(o.timeoutMs ? { timeoutMs: o.timeoutMs } : {}),
      ...(o.toolCallId ? { toolCallId: o.toolCallId } : {}),
    },
    { waitMs: 30_000 },
  );

async function card(project: string, toolCallId: string) {
  const c = await mesh.api.store.cards.toolResult(project, toolCallId);
  expect(c).toBeDefined();
  return c!;
}

describe('request mapping', () => {
  it('fills the URL, the query and the JSON body from the arguments, and charges its cost', async () => {
    await register(
      a,
      'shop.create_item',
      {
        method: 'POST',
        url: `${up.url}/echo/items/{id}`,
        headers: { 'x-fixed': 'yes' },
        query: ['q', 'tags'],
      },
      {
        parameters: params(
          {
            id: { type: 'string' },
            q: { type: 'string' },
            tags: { type: 'array', items: { type: 'string' } },
            name: { type: 'string' },
            count: { type: 'integer' },
          },
          ['id'],
        ),
        options: { cost: { per_call: 0.25, currency: 'EUR' } },
      },
    );
    const r = await call('shop.create_item', {
      id: 'a b/c?',
      q: 'x&y=z',
      tags: ['t1', 't2'],
      name: 'Näme',
      count: 2,
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const echoed = r.content.result as Record<string, any>;
    expect(echoed['method']).toBe('POST');
    expect(echoed['path']).toBe('/echo/items/a%20b%2Fc%3F');
    expect(echoed['query']).toEqual({ q: 'x&y=z', tags: ['t1', 't2'] });
    expect(JSON.parse(echoed['body'] as string)).toEqual({ name: 'Näme', count: 2 });
    expect(echoed['headers']['content-type']).toBe('application/json');
    expect(echoed['headers']['x-fixed']).toBe('yes');
    // A dot segment cannot climb out of the template's path.
    for (const id of ['..', '.']) {
      const climb = await call('shop.create_item', { id });
      expect(climb.content.error?.code, id).toBe('invalid_arguments');
    }

    const exec = await mesh.request('GET', `/v1/projects/${a.id}/executions/${r.tool_call_id}`, {
      key: a.key,
    });
    expect(exec.body.execution.cost).toEqual({ amount: 0.25, currency: 'EUR' });
    expect((await card(a.id, r.tool_call_id)).metadata).toMatchObject({
      cost: { amount: 0.25, currency: 'EUR' },
      attempts: [{ attempt: 1, outcome: 'succeeded' }],
      http_status: 200,
    });
    await call('shop.create_item', { id: 'second' });
    const metrics = await mesh.request('GET', `/v1/projects/${a.id}/executions/metrics`, {
      key: a.key,
    });
    expect(metrics.body.cost.totals).toEqual([{ currency: 'EUR', total: 0.5, calls: 2 }]);
    expect(metrics.body.cost.by_tool).toEqual([
      { tool: 'shop.create_item', currency: 'EUR', total: 0.5, calls: 2 },
    ]);
  });

  it('sends no body with GET, and answers text as text', async () => {
    await register(
      a,
      'shop.get_item',
      { method: 'GET', url: `${up.url}/echo/items/{id}`, query: ['verbose'] },
      {
        parameters: params({ id: { type: 'integer' }, verbose: { type: 'boolean' } }, ['id']),
      },
    );
    const r = await call('shop.get_item', { id: 7, verbose: true });
    expect(r.status).toBe('succeeded');
    const echoed = r.content.result as Record<string, any>;
    expect(echoed['method']).toBe('GET');
    expect(echoed['path']).toBe('/echo/items/7');
    expect(echoed['query']).toEqual({ verbose: 'true' });
    expect(echoed['body']).toBe('');
    await register(a, 'shop.text', { method: 'GET', url: `${up.url}/text/hello` });
    expect((await call('shop.text')).content.result).toBe('plain text for /text/hello');
  });

  it('runs over POST /executions like any tool', async () => {
    await register(a, 'shop.ping', { method: 'GET', url: `${up.url}/text/ping` });
    const res = await mesh.request('POST', `/v1/projects/${a.id}/executions`, {
      key: a.key,
      body: { tool: 'shop.ping', arguments: {} },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body.execution).toMatchObject({ tool: 'shop.ping', status: 'succeeded' });
    expect(res.body.card.content.result).toBe('plain text for /text/ping');
  });

  it('refuses templates that do not fit the parameters at registration', async () => {
    const bad = async (
      http: Record<string, unknown>,
      parameters = params({ id: { type: 'string' } }),
    ) =>
      expectError(
        await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
          key: a.key,
          body: { name: 'bad.tool', description: 'x', parameters, kind: 'http', http },
        }),
        400,
        'invalid_request',
      );
    await bad({ method: 'GET', url: `${up.url}/x/{id}` }); // id is not required
    await bad({ method: 'GET', url: `${up.url}/x/{nope}` }, params({ nope: {} }, []));
    await bad({ method: 'GET', url: 'http://{host}/x' });
    await bad({ method: 'GET', url: 'ftp://example.com/x' });
    await bad({ method: 'GET', url: `${up.url}/x`, query: ['missing'] });
    await bad({ method: 'GET', url: `${up.url}/x`, body: ['id'] });
    await bad({ method: 'GET', url: `${up.url}/x`, headers: { Host: 'elsewhere' } });
    await bad({ method: 'GET', url: `${up.url}/x`, auth: { type: 'bearer', secret: 'bad name' } });
    await bad({ method: 'GET', url: `${up.url}/x`, auth: { type: 'header', secret: 'token' } });
    expectError(
      await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
        key: a.key,
        body: { name: 'bad.tool', description: 'x', parameters: params({}), kind: 'http' },
      }),
      400,
      'invalid_request',
    );
    // Changes are checked against the pair too: the template's placeholder must stay required.
    const shown = await mesh.request('GET', `/v1/projects/${a.id}/tools/shop.get_item`, {
      key: a.key,
    });
    expect(shown.body).toMatchObject({
      origin: 'http',
      reserved: false,
      http: { method: 'GET', url: `${up.url}/echo/items/{id}` },
    });
    expectError(
      await mesh.request('PATCH', `/v1/projects/${a.id}/tools/shop.get_item`, {
        key: a.key,
        body: { parameters: params({ id: { type: 'integer' } }) },
      }),
      400,
      'invalid_request',
    );
    await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: { name: 'plain.ext', description: 'x', parameters: params({}) },
    });
    expectError(
      await mesh.request('PATCH', `/v1/projects/${a.id}/tools/plain.ext`, {
        key: a.key,
        body: { http: { method: 'GET', url: `${up.url}/x` } },
      }),
      400,
      'invalid_request',
    );
  });
});

describe('auth from secrets', () => {
  it.each([
    ['bearer', { type: 'bearer', secret: 'token' }, 'authorization', `Bearer ${SECRET}`],
    ['header', { type: 'header', secret: 'token', header: 'X-API-Key' }, 'x-api-key', SECRET],
    [
      'basic',
      { type: 'basic', secret: 'basic' },
      'authorization',
      `Basic ${Buffer.from(BASIC).toString('base64')}`,
    ],
  ])('%s: the upstream gets the secret, the card never does', async (kind, auth, header, sent) => {
    const name = `auth.${kind}`;
    await register(a, name, { method: 'GET', url: `${up.url}/echo/${kind}`, auth });
    const before = up.seen.length;
    const r = await call(name);
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(up.seen[before]!.headers[header]).toBe(sent);
    // The upstream echoed the credential back: it is redacted in the result and the card.
    const echoed = r.content.result as { headers: Record<string, string> };
    expect(echoed.headers[header]).toContain('[redacted]');
    const stored = JSON.stringify(await card(a.id, r.tool_call_id));
    expect(stored).not.toContain(SECRET);
    expect(stored).not.toContain(BASIC);
    expect(stored).not.toContain(Buffer.from(BASIC).toString('base64'));
  });

  it('a missing secret fails the call with secret_unavailable', async () => {
    await register(a, 'auth.missing', {
      method: 'GET',
      url: `${up.url}/echo/missing`,
      auth: { type: 'bearer', secret: 'not_stored' },
    });
    const before = up.hits('/echo/missing');
    const r = await call('auth.missing');
    expect(r.content.error?.code).toBe('secret_unavailable');
    expect(up.hits('/echo/missing')).toBe(before);
  });

  it('lists secrets by name and date only, and deletes them', async () => {
    const list = await mesh.request('GET', `/v1/projects/${a.id}/secrets`, { key: a.key });
    expect(list.status).toBe(200);
    expect(list.body.secrets.map((s: { name: string }) => s.name)).toEqual(['basic', 'token']);
    expect(Object.keys(list.body.secrets[0]).sort()).toEqual(['created_at', 'name', 'updated_at']);
    await mesh.request('PUT', `/v1/projects/${a.id}/secrets/temp`, {
      key: a.key,
      body: { value: 'short-lived' },
    });
    const replaced = await mesh.request('PUT', `/v1/projects/${a.id}/secrets/temp`, {
      key: a.key,
      body: { value: 'replaced' },
    });
    expect(replaced.status).toBe(200);
    const del = await mesh.request('DELETE', `/v1/projects/${a.id}/secrets/temp`, { key: a.key });
    expect(del.status).toBe(204);
    expectError(
      await mesh.request('DELETE', `/v1/projects/${a.id}/secrets/temp`, { key: a.key }),
      404,
      'not_found',
    );
    expectError(
      await mesh.request('PUT', `/v1/projects/${a.id}/secrets/bad%20name`, {
        key: a.key,
        body: { value: 'x' },
      }),
      400,
      'invalid_id',
    );
  });
});

describe('upstream failures and retries', () => {
  it('a non-2xx answer is upstream_error with the status and a bounded excerpt, not retried', async () => {
    await register(a, 'up.missing', {
      method: 'GET',
      url: `${up.url}/status/404`,
      auth: { type: 'bearer', secret: 'token' },
    });
    const r = await call('up.missing');
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('upstream_error');
    const details = r.content.error?.details as { status: number; body_excerpt: string };
    expect(details.status).toBe(404);
    expect(details.body_excerpt).toContain('upstream says no (404)');
    expect(details.body_excerpt.length).toBeLessThanOrEqual(2048);
    expect(details.body_excerpt).toContain('[redacted]');
    expect(JSON.stringify(r)).not.toContain(SECRET);
    expect(up.hits('/status/404')).toBe(1);
  });

  it('a 429 with Retry-After is retried after it, then succeeds; each attempt is recorded', async () => {
    const key = randomUUID();
    await register(
      a,
      'up.flaky',
      { method: 'GET', url: `${up.url}/flaky/${key}?fail=1&code=429&retry_after=1` },
      { options: { retries: { max: 3, base_ms: 10, max_ms: 50 } } },
    );
    const progress: unknown[] = [];
    const sub = mesh.api.nc.subscribe(
      mesh.client.subjects.toolProgress({ project: a.id, channel: 'test', target: 'up' }),
      { callback: (_e, m) => void progress.push(decodeMessage('tool_progress', m.data)) },
    );
    await mesh.api.nc.flush();
    const r = await call('up.flaky');
    sub.unsubscribe();
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    // The wait for the retry was announced as progress of the call.
    expect(progress).toEqual([
      expect.objectContaining({
        tool_call_id: r.tool_call_id,
        detail: expect.objectContaining({ retrying: true, attempt: 1, status: 429 }),
      }),
    ]);
    expect(r.content.result).toEqual({ ok: true, key });
    const meta = (await card(a.id, r.tool_call_id)).metadata as {
      attempts: { attempt: number; outcome: string; status?: number; retry_in_ms?: number }[];
    };
    expect(meta.attempts).toHaveLength(2);
    expect(meta.attempts[0]).toMatchObject({ attempt: 1, outcome: 'failed', status: 429 });
    expect(meta.attempts[0]!.retry_in_ms).toBeGreaterThanOrEqual(1000); // Retry-After: 1
    expect(meta.attempts[1]).toMatchObject({ attempt: 2, outcome: 'succeeded' });
  });

  it('retries 503 up to retries.max, then fails with the last answer', async () => {
    const key = randomUUID();
    await register(
      a,
      'up.down',
      { method: 'GET', url: `${up.url}/flaky/${key}?fail=99&code=503` },
      { options: { retries: { max: 2, base_ms: 5, max_ms: 20 } } },
    );
    const r = await call('up.down');
    expect(r.content.error?.code).toBe('upstream_error');
    expect(r.content.error?.details).toMatchObject({ status: 503 });
    expect(up.hits(`/flaky/${key}`)).toBe(3);
    const meta = (await card(a.id, r.tool_call_id)).metadata as { attempts: unknown[] };
    expect(meta.attempts).toHaveLength(3);
  });

  it('a connection refused is upstream_unreachable', async () => {
    await register(
      a,
      'up.gone',
      { method: 'GET', url: 'http://127.0.0.1:1/nothing' },
      { options: { retries: { max: 1, base_ms: 5 } } },
    );
    const r = await call('up.gone');
    expect(r.content.error?.code).toBe('upstream_unreachable');
    const meta = (await card(a.id, r.tool_call_id)).metadata as { attempts: unknown[] };
    expect(meta.attempts).toHaveLength(2);
  });
});

describe('deadline, cancel and size', () => {
  it('a deadline aborts the request', async () => {
    await register(
      a,
      'up.hang_timeout',
      { method: 'GET', url: `${up.url}/hang/t` },
      {
        options: { timeout_ms: 300 },
      },
    );
    const abortedBefore = up.aborted();
    const r = await call('up.hang_timeout');
    expect(r.status).toBe('timeout');
    await until(() => up.aborted() > abortedBefore);
  });

  it('a cancel aborts the request mid-flight', async () => {
    await register(a, 'up.hang_cancel', { method: 'GET', url: `${up.url}/hang/c` });
    const id = randomUUID();
    const hangsBefore = up.seen.filter((s) => s.path.startsWith('/hang')).length;
    const abortedBefore = up.aborted();
    const pending = call('up.hang_cancel', {}, a, { toolCallId: id, timeoutMs: 60_000 });
    await up.hanging(hangsBefore + 1);
    await mesh.client.cancel({ project: a.id, channel: 'test', toolCallId: id, reason: 'test' });
    const r = await pending;
    expect(r.status).toBe('canceled');
    await until(() => up.aborted() > abortedBefore);
  });

  it('a response over tools.max_result_bytes fails with payload_too_large', async () => {
    await register(a, 'up.big', { method: 'GET', url: `${up.url}/big/20000` });
    const r = await call('up.big');
    expect(r.content.error?.code).toBe('payload_too_large');
    expect(r.content.error?.details).toMatchObject({ limit_bytes: 8192 });
    await register(a, 'up.small', { method: 'GET', url: `${up.url}/big/100` });
    expect((await call('up.small')).status).toBe('succeeded');
  });
});

describe('the registry on the bus path', () => {
  it('unknown, disabled and deleted tools fail at once; changes take effect without a restart', async () => {
    expect((await call('nope.missing')).content.error?.code).toBe('unknown_tool');
    await register(a, 'reg.toggle', { method: 'GET', url: `${up.url}/echo/toggle` });
    expect((await call('reg.toggle')).status).toBe('succeeded');
    const url = `/v1/projects/${a.id}/tools/reg.toggle`;
    await mesh.request('PATCH', url, { key: a.key, body: { enabled: false } });
    expect((await call('reg.toggle')).content.error?.code).toBe('tool_disabled');
    await mesh.request('PATCH', url, { key: a.key, body: { enabled: true } });
    expect((await call('reg.toggle')).status).toBe('succeeded');
    await mesh.request('PATCH', url, {
      key: a.key,
      body: { http: { method: 'GET', url: `${up.url}/text/changed` } },
    });
    expect((await call('reg.toggle')).content.result).toBe('plain text for /text/changed');
    await mesh.request('DELETE', url, { key: a.key });
    expect((await call('reg.toggle')).content.error?.code).toBe('unknown_tool');
  });

  it('checks arguments against the stored schema', async () => {
    await register(
      a,
      'reg.strict',
      { method: 'GET', url: `${up.url}/echo/strict`, query: ['n'] },
      { parameters: params({ n: { type: 'integer', minimum: 1 } }, ['n']) },
    );
    const before = up.hits('/echo/strict');
    for (const args of [{}, { n: 0 }, { n: 'one' }, { n: 1, extra: true }]) {
      const r = await call('reg.strict', args);
      expect(r.content.error?.code, JSON.stringify(args)).toBe('invalid_arguments');
      expect((r.content.error?.details as { issues: unknown[] }).issues.length).toBeGreaterThan(0);
    }
    expect(up.hits('/echo/strict')).toBe(before);
    expect((await call('reg.strict', { n: 3 })).status).toBe('succeeded');
  });

  it('validates schemas that declare draft-07, as MCP servers often do', async () => {
    // Stored the way a kind that imports schemas would store it (the api itself asks for 2020-12).
    await mesh.api.store.tools.create(a.id, {
      name: 'reg.draft7',
      target: 'reg',
      description: 'x',
      category: 'general',
      parameters: {
        $schema: 'http://json-schema.org/draft-07/schema#',
        type: 'object',
        properties: { n: { type: 'integer' } },
        required: ['n'],
      },
      origin: 'http',
      spec: { method: 'GET', url: `${up.url}/echo/draft7`, query: ['n'] },
    });
    expect((await call('reg.draft7', { n: 'x' })).content.error?.code).toBe('invalid_arguments');
    expect((await call('reg.draft7', { n: 5 })).status).toBe('succeeded');
    // Over HTTP too.
    const run = (args: Record<string, unknown>) =>
      mesh.request('POST', `/v1/projects/${a.id}/executions`, {
        key: a.key,
        body: { tool: 'reg.draft7', arguments: args },
      });
    expectError(await run({ n: 'x' }), 400, 'invalid_arguments');
    expect((await run({ n: 6 })).body.execution.status).toBe('succeeded');
  });

  it('leaves external tools and the skills service targets alone', async () => {
    const res = await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: { name: 'ext.thing', description: 'served elsewhere', parameters: params({}) },
    });
    expect(res.status).toBe(201);
    const id = randomUUID();
    await mesh.client.publishToolCall({
      project: a.id,
      channel: 'test',
      tool: 'ext.thing',
      toolCallId: id,
    });
    await mesh.client.publishToolCall({
      project: a.id,
      channel: 'test',
      tool: 'builtin.echo',
      toolCallId: `${id}-b`,
    });
    // Once the service's consumer has acked everything, whatever it did with them is written.
    const jsm = await jetstreamManager(mesh.api.nc);
    const names = createNames(mesh.api.config.nats.subject_root);
    const consumer = names.toolServiceConsumer('tools');
    const stream = names.projectCommandStream(a.id);
    await untilAsync(async () => {
      const info = await jsm.consumers.info(stream, consumer);
      return info.num_pending === 0 && info.num_ack_pending === 0;
    });
    expect(await mesh.api.store.cards.toolResult(a.id, id)).toBeUndefined();
    expect(await mesh.api.store.cards.toolResult(a.id, `${id}-b`)).toBeUndefined();
  });
});

describe('projects are tenants', () => {
  it("another project's key cannot read, overwrite, delete or use a secret", async () => {
    for (const [method, path, body] of [
      ['GET', `/v1/projects/${a.id}/secrets`, undefined],
      ['PUT', `/v1/projects/${a.id}/secrets/token`, { value: 'overwritten' }],
      ['DELETE', `/v1/projects/${a.id}/secrets/token`, undefined],
    ] as const) {
      expectError(await mesh.request(method, path, { key: b.key, body }), 404, 'not_found');
    }
    // B registers a tool that names A's secret: B has no such secret, so nothing is sent.
    await register(b, 'steal.token', {
      method: 'GET',
      url: `${up.url}/echo/steal`,
      auth: { type: 'bearer', secret: 'token' },
    });
    const r = await call('steal.token', {}, b);
    expect(r.content.error?.code).toBe('secret_unavailable');
    expect(up.hits('/echo/steal')).toBe(0);
    // A's secret is untouched.
    await register(a, 'auth.still', {
      method: 'GET',
      url: `${up.url}/echo/still`,
      auth: { type: 'bearer', secret: 'token' },
    });
    expect((await call('auth.still')).status).toBe('succeeded');
    expect(up.seen.at(-1)!.headers['authorization']).toBe(`Bearer ${SECRET}`);
    // B's own secret of the same name is B's alone.
    await mesh.request('PUT', `/v1/projects/${b.id}/secrets/token`, {
      key: b.key,
      body: { value: 'b-own-value' },
    });
    expect((await call('steal.token', {}, b)).status).toBe('succeeded');
    expect(up.seen.at(-1)!.headers['authorization']).toBe('Bearer b-own-value');
  });
});

describe('secrets never leak', () => {
  it('no card, log line or api answer holds a secret', async () => {
    const cards = await mesh.api.store.pool.query<{ content: unknown; metadata: unknown }>(
      'SELECT content, metadata FROM cards',
    );
    expect(cards.rows.length).toBeGreaterThan(10);
    const forms = [SECRET, BASIC, Buffer.from(BASIC).toString('base64')];
    for (const text of [
      JSON.stringify(cards.rows),
      mesh.logs.join('\n'),
      mesh.responses.join('\n'),
    ]) {
      for (const f of forms) expect(text).not.toContain(f);
    }
    expect(mesh.logs.length).toBeGreaterThan(0);
  });
});

describe('egress', () => {
  let strict: ToolsMesh;
  let p: { id: string; key: string };
  beforeAll(async () => {
    strict = await startToolsMesh(); // no private host allowed, no secrets key
    p = await strict.api.createProject();
  });
  afterAll(async () => {
    await strict?.close();
  });

  it.each([
    ['an IP literal', () => `${up.url}/echo/literal`],
    ['a name resolving to it', () => `http://localhost:${up.port}/echo/name`],
    ['IPv6 loopback', () => `http://[::1]:${up.port}/echo/v6`],
    ['IPv4-mapped IPv6', () => `http://[::ffff:127.0.0.1]:${up.port}/echo/mapped`],
  ])('refuses loopback as %s', async (_what, url) => {
    const res = await strict.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: {
        name: `eg.t${randomUUID().slice(0, 8)}`,
        description: 'x',
        parameters: params({}),
        kind: 'http',
        http: { method: 'GET', url: url() },
      },
    });
    expect(res.status, res.raw).toBe(201);
    const before = up.seen.length;
    const r = await strict.client.callTool(
      { project: p.id, channel: 'test', tool: res.body.name as string },
      { waitMs: 30_000 },
    );
    expect(r.content.error?.code, JSON.stringify(r.content)).toBe('egress_denied');
    expect(up.seen.length).toBe(before);
  });

  it('refuses to store a secret without a configured key', async () => {
    expectError(
      await strict.request('PUT', `/v1/projects/${p.id}/secrets/token`, {
        key: p.key,
        body: { value: 'x' },
      }),
      503,
      'secrets_unconfigured',
    );
  });
});

describe('the process', () => {
  it('starts from main.ts, answers /healthz and stops cleanly on SIGTERM', async () => {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'services/tools/src/main.ts')], {
      cwd: REPO_ROOT,
      env: {
        PATH: process.env['PATH'] ?? '',
        ...mesh.api.serviceEnv('tools'),
        CG__LOG__LEVEL: 'info',
        CG__TOOLS__HEALTH_PORT: String(await freePort()),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    await until(() => out.includes('tools service started'), 20_000);
    const port = (
      JSON.parse(out.split('\n').find((l) => l.includes('tools service started'))!) as {
        health_port: number;
      }
    ).health_port;
    const health = await fetch(`http://127.0.0.1:${port}/healthz`);
    expect(health.status).toBe(200);
    expect(await health.json()).toMatchObject({ status: 'ok', in_flight: 0 });
    // The configuration it logged at start masks the secrets key.
    expect(out).not.toContain(mesh.api.env['CG__SECRETS__KEY']!);
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code, out.slice(-2_000)).toBe(0);
  });
});

async function until(check: () => boolean, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}

async function untilAsync(check: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 20));
  }
}
