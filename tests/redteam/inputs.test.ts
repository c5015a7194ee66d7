// Red team, area "inputs": what a tenant sends that nests, refers or multiplies until the code
// reading it stalls or crashes. Each is refused with a 4xx naming its limit (or, over the bus, a
// failed card at the first delivery), never a 500, a retry loop or a stalled event loop:
// - arguments nested 5,000 deep (HTTP executions and schedules; raw over the bus), a parameters
//   schema nested 20,000 deep, and values just past tools.max_arguments_depth and
//   tools.max_schema_depth;
// - an unparsable tool call on the bus;
// - a 2.6 KiB OpenAPI document whose schemas refer twice to the one before, 20 levels deep (a
//   million schemas once expanded), a document of 10,000 operations, a document nested 1,000
//   deep: refused before anything expands them;
// - the same expanding document with the expansion limit raised: the import works in a worker
//   thread while the api keeps answering other projects, and is stopped at its deadline; a
//   second import meanwhile is told the api is busy;
// - a 14 MB document sent as a JSON object (the body the api's loop used to parse and walk): the
//   api answers every health check of a probe with a 1 s timeout while it is read and refused,
//   and a 20 MB body is answered 413 with the limit once sent, never with a reset connection;
// - a cron pattern of 7 fields.
import { randomUUID } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { setTimeout as sleep } from 'node:timers/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream } from '@nats-io/jetstream';
import { headers as natsHeaders, type NatsConnection } from '@nats-io/transport-node';
import { Header, createSubjects } from '@toolmesh/protocol';
import {
  expectError,
  startTestApi,
  type TestApi,
  type TestResponse,
} from '../../services/api/src/test/support.ts';
import { until } from '../support/procs.ts';
import { startToolsMesh, type ToolsMesh } from '../support/tools-mesh.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';

let mesh: ToolsMesh;
let up: Upstream;
let a: { id: string; key: string };
let tenant: NatsConnection;

beforeAll(async () => {
  up = await startUpstream();
  mesh = await startToolsMesh({ CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]' });
  a = await mesh.api.createProject();
  tenant = await mesh.api.nats.connectProject(a.id);
  const res = await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
    key: a.key,
    body: {
      name: 'deep.echo',
      description: 'echoes',
      parameters: { type: 'object' },
      kind: 'http',
      http: { method: 'GET', url: `${up.url}/echo/deep` },
    },
  });
  expect(res.status, res.raw).toBe(201);
});
afterAll(async () => {
  if (tenant && !tenant.isClosed()) await tenant.close();
  await mesh?.close();
  await up?.close();
});

/** JSON text of an object nested `depth` levels deep (`{"n":{"n":...{}}}`), built as text:
 *  JSON.stringify of such a value overflows the stack in this process too. */
const nestedText = (depth: number) => `${'{"n":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;
/** A parameters schema nested `levels` properties deep: JSON depth 2 × levels + 1. */
const schemaText = (levels: number) =>
  `${'{"type":"object","properties":{"n":'.repeat(levels)}{}${'}}'.repeat(levels)}`;

const post = (url: string, key: string, text: string): Promise<TestResponse> =>
  mesh.request('POST', url, {
    key,
    payload: text,
    headers: { 'content-type': 'application/json' },
  });

describe('deeply nested input over HTTP', () => {
  it('refuses arguments 5,000 deep, and past tools.max_arguments_depth, with nesting_too_deep', async () => {
    const execution = (depth: number) =>
      post(
        `/v1/projects/${a.id}/executions`,
        a.key,
        `{"tool":"deep.echo","wait_ms":20000,"arguments":${nestedText(depth)}}`,
      );
    const huge = await execution(5_000);
    expectError(huge, 400, 'nesting_too_deep');
    expect(huge.body.error.details).toEqual({ limit_depth: 128 });
    // Inside the body's limit, past the arguments' own (64).
    const deep = await execution(65);
    expectError(deep, 400, 'nesting_too_deep');
    expect(deep.body.error.details).toEqual({ limit_depth: 64 });
    const schedule = await post(
      `/v1/projects/${a.id}/schedules`,
      a.key,
      `{"name":"deep","cron":"0 3 * * *","tool":"deep.echo","arguments":${nestedText(65)}}`,
    );
    expectError(schedule, 400, 'nesting_too_deep');
    // At the limit, the call runs.
    const fine = await execution(64);
    expect(fine.status, fine.raw).toBe(200);
    expect(fine.body.execution.status).toBe('succeeded');
  });

  it('refuses a parameters schema 20,000 deep, and past tools.max_schema_depth, with nesting_too_deep', async () => {
    const register = (name: string, levels: number) =>
      post(
        `/v1/projects/${a.id}/tools`,
        a.key,
        `{"name":"${name}","description":"d","parameters":${schemaText(levels)}}`,
      );
    expectError(await register('deep.huge', 10_000), 400, 'nesting_too_deep');
    // Depth 111: inside the body's limit (128), past the schema's own (100).
    const deep = await register('deep.schema', 55);
    expectError(deep, 400, 'nesting_too_deep');
    expect(deep.body.error.details).toMatchObject({ field: 'parameters', limit_depth: 100 });
    const update = await mesh.request('PATCH', `/v1/projects/${a.id}/tools/deep.echo`, {
      key: a.key,
      payload: `{"parameters":${schemaText(55)}}`,
      headers: { 'content-type': 'application/json' },
    });
    expectError(update, 400, 'nesting_too_deep');
    expect((await register('deep.ok', 40)).status).toBe(201);
  });

  it('refuses a cron pattern of 7 fields (or a nickname): 5 fields, or 6 with seconds', async () => {
    for (const cron of ['0 0 3 * * * 2030', '@daily']) {
      const res = await mesh.request('POST', `/v1/projects/${a.id}/schedules`, {
        key: a.key,
        body: { name: `c${randomUUID().slice(0, 8)}`, cron, tool: 'deep.echo' },
      });
      expectError(res, 400, 'invalid_schedule');
      expect(res.body.error.details).toEqual({ field: 'cron' });
    }
  });
});

describe('deeply nested or unparsable calls on the bus', () => {
  const subjects = () => createSubjects(mesh.api.nats.root);

  /** Publishes raw bytes as a tool call of deep.echo, as a tenant with a bus credential may. */
  async function publishRaw(toolCallId: string, body: string) {
    const h = natsHeaders();
    h.set(Header.toolCallId, toolCallId);
    await jetstream(tenant).publish(
      subjects().toolCall({ project: a.id, channel: 'redteam', target: 'deep', tool: 'echo' }),
      new TextEncoder().encode(body),
      { headers: h, msgID: `${a.id}/${toolCallId}` },
    );
  }
  const cardOf = (id: string) =>
    until(async () => (await mesh.api.store.cards.toolResult(a.id, id)) ?? undefined, 30_000);

  it('fails a call nested 5,000 deep (or unparsable) at its first delivery, with its code', async () => {
    const id = `deep-${randomUUID()}`;
    await publishRaw(
      id,
      `{"v":1,"tool_call_id":"${id}","tool_name":"deep.echo","arguments":${nestedText(5_000)}}`,
    );
    const card = await cardOf(id);
    expect(card.content).toMatchObject({
      status: 'failed',
      error: { code: 'nesting_too_deep', details: { limit_depth: 64 } },
    });
    const bad = `bad-${randomUUID()}`;
    await publishRaw(bad, `{"v":1,"tool_call_id":"${bad}","tool_name":"deep.ec`);
    expect((await cardOf(bad)).content).toMatchObject({
      status: 'failed',
      error: { code: 'malformed_json' },
    });
    // Each handled once: never nak'ed for a retry.
    expect(
      mesh.logs.filter((l) => (l.includes(id) || l.includes(bad)) && l.includes('nak')),
    ).toEqual([]);
    // The service still serves the tenant.
    const r = await mesh.client.callTool(
      { project: a.id, channel: 'redteam', tool: 'deep.echo', arguments: { text: 'alive' } },
      { waitMs: 30_000 },
    );
    expect(r.status, JSON.stringify(r)).toBe('succeeded');
  });
});

/** Schemas s1..sN each referring twice to the one before: 2^N schemas once expanded. */
function fanOutDocument(levels: number) {
  const schemas: Record<string, unknown> = { s0: { type: 'string' } };
  for (let i = 1; i <= levels; i++) {
    const ref = { $ref: `#/components/schemas/s${i - 1}` };
    schemas[`s${i}`] = { type: 'object', properties: { a: ref, b: ref } };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'fan-out', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths: {
      '/x': {
        post: {
          operationId: 'x',
          requestBody: {
            content: {
              'application/json': { schema: { $ref: `#/components/schemas/s${levels}` } },
            },
          },
          responses: { 200: { description: 'ok' } },
        },
      },
    },
    components: { schemas },
  };
}

/**
 * An OpenAPI document whose reading is long but bounded: `operations` operations whose bodies
 * refer to one schema of 400 string properties, each with its own pattern. Nothing in it grows
 * past a limit; the work is compiling every operation's schema (a fan-out document no longer
 * takes long: the import stops reading a schema once it is past the registry's size limit).
 */
function slowDocument(operations: number) {
  const properties = Object.fromEntries(
    Array.from({ length: 400 }, (_, j) => [
      `f${j}`,
      { type: 'string', pattern: `^[a-z]{1,8}-${j}(\\.[0-9]+)?$`, maxLength: 64 },
    ]),
  );
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++) {
    paths[`/op${i}`] = {
      post: {
        operationId: `op${i}`,
        requestBody: {
          content: { 'application/json': { schema: { $ref: '#/components/schemas/Big' } } },
        },
        responses: { 200: { description: 'ok' } },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'slow', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths,
    components: { schemas: { Big: { type: 'object', properties } } },
  };
}

/** An OpenAPI document of `operations` operations, each with ten parameters and a body schema
 *  of fifty properties: about 7 KB of JSON per operation, in many small objects. */
function wideDocument(operations: number) {
  const paths: Record<string, unknown> = {};
  for (let i = 0; i < operations; i++) {
    const properties = Object.fromEntries(
      Array.from({ length: 50 }, (_, j) => [
        `field_${j}`,
        { type: 'string', maxLength: 64, description: `field ${j} of operation ${i}, as written` },
      ]),
    );
    paths[`/things${i}/{id}`] = {
      post: {
        operationId: `thing${i}`,
        parameters: [
          { name: 'id', in: 'path', required: true, schema: { type: 'string' } },
          ...Array.from({ length: 9 }, (_, j) => ({
            name: `q${j}`,
            in: 'query',
            description: `query parameter ${j} of operation ${i}`,
            schema: { type: 'integer', minimum: 0, maximum: 1000 },
          })),
        ],
        requestBody: {
          content: { 'application/json': { schema: { type: 'object', properties } } },
        },
        responses: { 200: { description: 'ok' } },
      },
    };
  }
  return {
    openapi: '3.0.3',
    info: { title: 'wide', version: '1' },
    servers: [{ url: 'https://api.example.com' }],
    paths,
  };
}

/** POST over a real socket; `sent` runs once the whole body is written. */
function postRaw(
  url: string,
  key: string,
  body: Buffer,
  sent: () => void,
): Promise<{ status: number; json: { error?: { code: string; details?: unknown } } }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      url,
      {
        method: 'POST',
        headers: {
          authorization: `Bearer ${key}`,
          'content-type': 'application/json',
          'content-length': body.length,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () =>
          resolve({
            status: res.statusCode ?? 0,
            json: JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
              error?: { code: string };
            },
          }),
        );
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.end(body, sent);
  });
}

/** A load balancer's health check: /healthz within its timeout. */
const PROBE_TIMEOUT_MS = 1_000;

const importDoc = (api: TestApi, p: { id: string; key: string }, document: unknown) =>
  api.request('POST', `/v1/projects/${p.id}/openapi`, {
    key: p.key,
    body: { prefix: `imp${randomUUID().slice(0, 8)}`, document },
  });

describe('a hostile OpenAPI import', () => {
  it('is refused before anything expands it, naming the limit it went past', async () => {
    const fan = fanOutDocument(20);
    expect(JSON.stringify(fan).length).toBeLessThan(3_000);
    const expanding = await importDoc(mesh.api, a, fan);
    expectError(expanding, 422, 'openapi_expansion_limit');
    expect(expanding.body.error.details).toEqual({ limit: 1_000_000 });

    const paths = Object.fromEntries(
      Array.from({ length: 10_000 }, (_, i) => [
        `/op${i}`,
        { get: { operationId: `op${i}`, responses: { 200: { description: 'ok' } } } },
      ]),
    );
    const many = await importDoc(mesh.api, a, {
      openapi: '3.1.0',
      info: { title: 'many', version: '1' },
      paths,
    });
    expectError(many, 413, 'openapi_operations_limit');
    expect(many.body.error.details).toEqual({ operations: 10_000, limit: 2_000 });

    // YAML (or JSON) text is read in the worker; its depth is checked there.
    const deepText = `{"openapi":"3.0.3","info":{"title":"t","version":"1"},"paths":{},"x-deep":${nestedText(1_000)}}`;
    expectError(await importDoc(mesh.api, a, deepText), 400, 'nesting_too_deep');
  });

  it('works off the event loop: other projects are served meanwhile, and it is stopped at its deadline', async () => {
    // Long but bounded work (every operation's schema compiled): only the worker's deadline stops it.
    const api = await startTestApi({
      CG__API__OPENAPI_MAX_EXPANSION: '1000000000',
      CG__API__OPENAPI_TIMEOUT_MS: '3000',
      CG__API__OPENAPI_MAX_CONCURRENT: '1',
    });
    try {
      const x = await api.createProject();
      const y = await api.createProject();
      let settled = false;
      const hostile = importDoc(api, x, slowDocument(500)).finally(() => {
        settled = true;
      });
      // The import is in its worker once the api reports it (read over HTTP: the loop answers).
      await until(async () => {
        const m = await api.request('GET', '/metrics');
        return /^toolmesh_openapi_imports_running 1$/m.test(m.raw) ? true : undefined;
      }, 30_000);
      // While it works: another project is served, /healthz answers, and a second import is
      // told to come back rather than queued behind it.
      const other = await api.request('GET', `/v1/projects/${y.id}/tools`, { key: y.key });
      expect(other.status, other.raw).toBe(200);
      expect((await api.request('GET', '/healthz')).status).toBe(200);
      const second = await importDoc(api, y, fanOutDocument(3));
      expectError(second, 429, 'openapi_busy');
      expect(second.headers['retry-after']).toBe('1');
      expect(settled).toBe(false);

      const res = await hostile;
      expectError(res, 422, 'openapi_time_limit');
      expect(res.body.error.details).toEqual({ limit_ms: 3_000 });
      // Its worker is gone: the next import runs.
      const after = await importDoc(api, y, fanOutDocument(3));
      expect(after.status, after.raw).toBe(200);
    } finally {
      await api.close();
    }
  });

  it('keeps answering health checks while a multi-megabyte document is read, and answers 413 to a larger one', async () => {
    const api = await startTestApi();
    try {
      const base = await api.app.listen({ host: '127.0.0.1', port: 0 });
      const x = await api.createProject();
      // 2,001 operations: past api.openapi_max_document_operations, refused once it is read.
      const body = Buffer.from(JSON.stringify({ prefix: 'wide', document: wideDocument(2_001) }));
      expect(body.length).toBeGreaterThan(12_000_000);
      expect(body.length).toBeLessThan(api.config.api.openapi_max_bytes);
      let sent = false;
      let answered = false;
      const imported = postRaw(`${base}/v1/projects/${x.id}/openapi`, x.key, body, () => {
        sent = true;
      }).finally(() => {
        answered = true;
      });
      // A health checker probes the api the whole time, each probe with its timeout.
      const probes: { status: number | string; duringImport: boolean; ms: number }[] = [];
      while (!answered) {
        const during = sent;
        const started = performance.now();
        const status = await fetch(`${base}/healthz`, {
          signal: AbortSignal.timeout(PROBE_TIMEOUT_MS),
        }).then(
          (r) => r.status,
          (err: Error) => err.name,
        );
        probes.push({ status, duringImport: during && !answered, ms: performance.now() - started });
        await sleep(5);
      }
      const res = await imported;
      expect(res.status, JSON.stringify(res.json)).toBe(413);
      expect(res.json.error?.code).toBe('openapi_operations_limit');
      // Every probe answered (none timed out), and several while the document was in the api.
      expect(probes.filter((p) => p.status !== 200)).toEqual([]);
      expect(probes.filter((p) => p.duringImport).length).toBeGreaterThanOrEqual(3);
      const slowest = Math.max(...probes.map((p) => p.ms));
      process.stderr.write(
        `[inputs] ${probes.length} health probes during a ${(body.length / 1e6).toFixed(1)} MB import; slowest ${slowest.toFixed(0)} ms\n`,
      );

      // Past the limit, whatever the size: the body is read and the answer is a 413 naming the
      // limit (a server that answers and closes while the client writes resets the connection).
      const limit = api.config.api.openapi_max_bytes;
      const huge = Buffer.alloc(20 * 1024 * 1024, 0x20);
      huge.write('{"prefix":"huge","document":"');
      huge.write('"}', huge.length - 2);
      const refused = await postRaw(`${base}/v1/projects/${x.id}/openapi`, x.key, huge, () => {});
      expect(refused.status).toBe(413);
      expect(refused.json.error?.code).toBe('payload_too_large');
      expect(refused.json.error?.details).toEqual({ limit_bytes: limit, bytes: huge.length });
      expect((await fetch(`${base}/healthz`)).status).toBe(200);
    } finally {
      await api.close();
    }
  }, 120_000);
});
