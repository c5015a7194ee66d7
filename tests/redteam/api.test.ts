// Red team, area "API and logs": each attack a tenant can make on the public HTTP API (and on the
// bus path the tools service validates), run as that tenant, and shown refused or contained,
// with the api still serving afterwards:
// - a catastrophic regex in a tool's parameters schema, then calls with a long adversarial string
//   (HTTP executions route and over the bus through the tools service), and a quadratic
//   `uniqueItems` with a long array, and `$ref`s that multiply;
// - a `$id` collision across two projects;
// - brute-forcing keys (429 with Retry-After; the admin key stays behind the limit);
// - a short admin key (refused at start);
// - credentials in the configuration (Postgres URL with a password, NATS token, LLM key) never
//   in the api's own log output, nor in /readyz or 503 bodies when Postgres is down;
// - an internal error whose message quotes a host path never reaches a card with that path.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createBus } from '@toolmesh/bus';
import { streamSettingsOf } from '@toolmesh/service';
import { freePort } from '@toolmesh/testing';
import { createToolService, defineTool, limitsFromConfig } from '@toolmesh/tool-service';
import type { ToolService } from '@toolmesh/tool-service';
import { z } from 'zod';
import { ADMIN_KEY, expectError, type TestResponse } from '../../services/api/src/test/support.ts';
import { REPO_ROOT } from '../support/mesh.ts';
import { startToolsMesh, type ToolsMesh } from '../support/tools-mesh.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';

const API_MAIN = join(REPO_ROOT, 'services/api/src/main.ts');
/** Exponential on a backtracking engine: 30 `a`s and a `!` already take seconds on V8. */
const EVIL = '^(a+)+$';
const ATTACK = `${'a'.repeat(60_000)}!`;
const MAX_CALL_BYTES = 1_000_000;

let mesh: ToolsMesh;
let up: Upstream;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  up = await startUpstream();
  mesh = await startToolsMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    // Calls of up to ~1 MB (the bus's largest message) rather than 256 KiB: room for an array
    // long enough that a quadratic uniqueItems over the bus would take minutes, not seconds.
    CG__TOOLS__MAX_CALL_BYTES: String(MAX_CALL_BYTES),
  });
  a = await mesh.api.createProject();
  b = await mesh.api.createProject();
});
afterAll(async () => {
  await mesh?.close();
  await up?.close();
});

async function register(
  project: { id: string; key: string },
  name: string,
  parameters: Record<string, unknown>,
): Promise<TestResponse> {
  return mesh.request('POST', `/v1/projects/${project.id}/tools`, {
    key: project.key,
    body: {
      name,
      description: `the ${name} tool`,
      parameters,
      kind: 'http',
      http: { method: 'GET', url: `${up.url}/echo/${name}` },
    },
  });
}

const execute = (
  project: { id: string; key: string },
  tool: string,
  args: Record<string, unknown>,
) =>
  mesh.request('POST', `/v1/projects/${project.id}/executions`, {
    key: project.key,
    body: { tool, arguments: args, wait_ms: 20_000 },
  });

const overBus = (
  project: { id: string },
  tool: string,
  args: Record<string, unknown>,
  waitMs = 20_000,
) =>
  mesh.client.callTool(
    { project: project.id, channel: 'redteam', tool, arguments: args },
    { waitMs },
  );

async function stillServing(project: { id: string; key: string }) {
  expect((await mesh.request('GET', '/healthz')).status).toBe(200);
  const tools = await mesh.request('GET', `/v1/projects/${project.id}/tools`, {
    key: project.key,
  });
  expect(tools.status, tools.raw).toBe(200);
}

describe('a catastrophic regex in a parameters schema', () => {
  it('runs in linear time over HTTP and over the bus; the api keeps serving', async () => {
    const res = await register(a, 'evil.match', {
      type: 'object',
      properties: { q: { type: 'string', pattern: EVIL } },
      patternProperties: { '^(b+)+$': { type: 'string' } },
    });
    expect(res.status, res.raw).toBe(201);

    // A backtracking engine would not finish these in the age of the universe: the test's
    // timeout is the check, not a stopwatch.
    const http = await execute(a, 'evil.match', { q: ATTACK });
    expectError(http, 400, 'invalid_arguments');
    expect(http.body.error.details.issues[0]).toMatchObject({ path: '/q', keyword: 'pattern' });
    const key = await execute(a, 'evil.match', { q: 'aaa', [`${'b'.repeat(60_000)}!`]: 1 });
    expect(key.status, key.raw).toBe(200);

    const bus = await overBus(a, 'evil.match', { q: ATTACK }, 60_000);
    expect(bus.content.error?.code).toBe('invalid_arguments');
    // A matching string passes both validators and runs.
    expect((await overBus(a, 'evil.match', { q: 'aaaa' })).status).toBe('succeeded');
    await stillServing(a);
  }, 90_000);

  it('refuses patterns the linear-time engine cannot run, with a clear 400', async () => {
    for (const parameters of [
      { type: 'object', properties: { q: { type: 'string', pattern: '^(?=a)(a+)+$' } } },
      { type: 'object', properties: { q: { type: 'string', pattern: '^(a)\\1$' } } },
      { type: 'object', patternProperties: { '(?<!x)y': { type: 'string' } } },
    ]) {
      const res = await register(a, `evil.refused${randomUUID().slice(0, 8)}`, parameters);
      expectError(res, 400, 'invalid_schema');
      expect(res.body.error.message).toMatch(/linear-time engine \(RE2\)/);
    }
    // Linear, but with a constant too large to run on every call: refused by its size.
    const big = await register(a, 'evil.big', {
      type: 'object',
      properties: { q: { type: 'string', pattern: '[\\s\\S]{1000}[\\s\\S]{1000}[\\s\\S]{1000}' } },
    });
    expectError(big, 400, 'invalid_schema');
    expect(big.body.error.message).toMatch(/states, over the limit/);
    await stillServing(a);
  });
});

describe('a quadratic uniqueItems', () => {
  it('is checked in linear time over HTTP and over the bus', async () => {
    const res = await register(a, 'evil.unique', {
      type: 'object',
      properties: { items: { type: 'array', uniqueItems: true } },
    });
    expect(res.status, res.raw).toBe(201);
    // A duplicate only at the very end. ajv's pairwise check takes 16 s for 20,000 of these
    // on a 2-core CI host and four times that per doubling: 120,000 take about ten minutes,
    // 110,000 (what fits in one call on the bus) eight; the linear check a fraction of a second.
    // The test's timeout is the check, not a stopwatch.
    const items = (n: number) => [...Array.from({ length: n }, (_, i) => [i]), [0]];
    const http = await execute(a, 'evil.unique', { items: items(120_000) });
    expectError(http, 400, 'invalid_arguments');
    expect(http.body.error.details.issues[0]).toMatchObject({ keyword: 'uniqueItems' });
    const many = items(110_000);
    expect(JSON.stringify(many).length).toBeLessThan(MAX_CALL_BYTES - 10_000);
    const bus = await overBus(a, 'evil.unique', { items: many }, 60_000);
    expect(bus.content.error?.code, JSON.stringify(bus.content)).toBe('invalid_arguments');
    expect(bus.content.error?.details).toMatchObject({
      issues: [{ path: '/items', keyword: 'uniqueItems' }],
    });
    await stillServing(a);
  }, 90_000);
});

describe('a schema whose $refs multiply', () => {
  it('is refused at registration: 2^40 evaluations per value would stall every call', async () => {
    const defs: Record<string, unknown> = { a0: { type: 'string' } };
    for (let i = 1; i <= 40; i++) {
      defs[`a${i}`] = { allOf: [{ $ref: `#/$defs/a${i - 1}` }, { $ref: `#/$defs/a${i - 1}` }] };
    }
    const res = await register(a, 'evil.refs', {
      type: 'object',
      $defs: defs,
      properties: { x: { $ref: '#/$defs/a40' } },
    });
    expectError(res, 400, 'invalid_schema');
    expect(res.body.error.message).toMatch(/expands to more than/);
    await stillServing(a);
  });

  it('is refused when recursive and branching: each level of the data would double the work', async () => {
    const res = await register(a, 'evil.recurse', {
      type: 'object',
      anyOf: [
        { properties: { a: { $ref: '#' } }, required: ['b'] },
        { properties: { a: { $ref: '#' } }, required: ['c'] },
      ],
    });
    expectError(res, 400, 'invalid_schema');
    expect(res.body.error.message).toMatch(/refers back to itself twice/);
    await stillServing(a);
  });
});

describe('a $id collision across projects', () => {
  const schema = (type: string) => ({
    $id: 'https://schemas.example.com/shared',
    type: 'object',
    $defs: { item: { $id: 'https://schemas.example.com/item', type } },
    properties: { x: { $ref: 'https://schemas.example.com/item' } },
    required: ['x'],
  });

  it("validates each project's calls with its own schema, over HTTP and the bus", async () => {
    expect((await register(a, 'ids.same', schema('string'))).status).toBe(201);
    expect((await register(b, 'ids.same', schema('integer'))).status).toBe(201);
    for (let round = 0; round < 2; round++) {
      expectError(await execute(a, 'ids.same', { x: 1 }), 400, 'invalid_arguments');
      expect((await execute(a, 'ids.same', { x: 's' })).status).toBe(200);
      expectError(await execute(b, 'ids.same', { x: 's' }), 400, 'invalid_arguments');
      expect((await execute(b, 'ids.same', { x: 1 })).status).toBe(200);
      expect((await overBus(a, 'ids.same', { x: 1 })).content.error?.code).toBe(
        'invalid_arguments',
      );
      expect((await overBus(b, 'ids.same', { x: 's' })).content.error?.code).toBe(
        'invalid_arguments',
      );
      expect((await overBus(b, 'ids.same', { x: 2 })).status).toBe('succeeded');
    }
  });

  it("cannot reach another project's $id", async () => {
    const res = await register(b, 'ids.borrow', {
      type: 'object',
      properties: { x: { $ref: 'https://schemas.example.com/shared' } },
    });
    expectError(res, 400, 'invalid_schema');
    await stillServing(b);
  });
});

describe('brute-forcing keys', () => {
  const from = (address: string, key: string, url = `/v1/projects/${a.id}/tools`) =>
    mesh.api.app.inject({
      method: 'GET',
      url,
      remoteAddress: address,
      headers: { authorization: `Bearer ${key}` },
    });

  it('answers 429 with Retry-After past the limit, for that address only', async () => {
    const attacker = '203.0.113.7';
    const limit = mesh.api.config.api.auth_failure_limit;
    for (let i = 0; i < limit; i++) {
      expect((await from(attacker, `tmk_guess_${i}`)).statusCode).toBe(401);
    }
    const refused = await from(attacker, 'tmk_guess_last');
    expect(refused.statusCode).toBe(429);
    expect(refused.json().error.code).toBe('rate_limited');
    const retryAfter = Number(refused.headers['retry-after']);
    expect(retryAfter).toBeGreaterThan(0);
    expect(retryAfter).toBeLessThanOrEqual(mesh.api.config.api.auth_failure_window_sec);
    // A right guess at the admin key (the one secret a person chooses) is not told apart from
    // a wrong one; a project key (256 random bits, no guess reaches one) passes, so tenants
    // behind the attacker's NAT are not locked out (crowd-out.test.ts).
    expect((await from(attacker, ADMIN_KEY)).statusCode).toBe(429);
    expect((await from(attacker, `tmk_${'g'.repeat(43)}`)).statusCode).toBe(429);
    // Other clients and the unauthenticated routes are not affected.
    expect((await from('198.51.100.2', a.key)).statusCode).toBe(200);
    expect(
      (await mesh.api.app.inject({ url: '/healthz', remoteAddress: attacker })).statusCode,
    ).toBe(200);
    await stillServing(a);
  });
});

/** A process of services/api, with every byte it wrote. */
interface ApiProcess {
  output(): string;
  url: string;
  stop(): Promise<number | null>;
}

async function runApi(env: Record<string, string>, waitFor = 'api listening'): Promise<ApiProcess> {
  const child = spawn(process.execPath, [API_MAIN], {
    cwd: REPO_ROOT,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (c: Buffer) => (out += c.toString()));
  child.stderr.on('data', (c: Buffer) => (out += c.toString()));
  const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
  const url = await new Promise<string>((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`api did not start:\n${out}`)), 20_000);
    const check = () => {
      const m = /"address":"(http:\/\/[^"]+)"/.exec(out);
      if (out.includes(waitFor) && m) {
        clearTimeout(timer);
        resolve(m[1]!);
      }
    };
    child.stdout.on('data', check);
    void exited.then((code) => {
      clearTimeout(timer);
      reject(new Error(`api exited (${code}):\n${out}`));
    });
  });
  return {
    output: () => out,
    url,
    stop: async () => {
      child.kill('SIGTERM');
      return exited;
    },
  };
}

describe('the admin key', () => {
  it('is refused at start when short, naming the key but not showing it', async () => {
    const short = `short-${randomUUID().slice(0, 8)}`;
    const child = spawn(process.execPath, [API_MAIN], {
      cwd: REPO_ROOT,
      env: { PATH: process.env['PATH'] ?? '', CG__API__ADMIN_KEY: short },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let out = '';
    child.stdout.on('data', (c: Buffer) => (out += c.toString()));
    child.stderr.on('data', (c: Buffer) => (out += c.toString()));
    const code = await new Promise((r) => child.once('exit', r));
    expect(code).toBe(2);
    expect(out).toContain('api.admin_key');
    expect(out).toMatch(/at least 24 characters/);
    expect(out).not.toContain(short);
  });
});

describe('credentials in the configuration', () => {
  it('never reach the logs, /readyz or error bodies, with Postgres down', async () => {
    const pgPassword = `pg-pw-${randomUUID()}`;
    const natsToken = `nats-tok-${randomUUID()}`;
    const llmKey = `sk-live-${randomUUID()}`;
    const admin = `admin-${randomUUID()}`;
    const deadPort = await freePort();
    const natsUrl = mesh.api.env['CG__NATS__URL']!.replace('nats://', `nats://${natsToken}@`);
    const api = await runApi({
      CG__API__PORT: '0',
      CG__API__ADMIN_KEY: admin,
      CG__NATS__URL: natsUrl,
      CG__NATS__SUBJECT_ROOT: mesh.api.nats.root,
      CG__NATS__CREDS: mesh.api.nats.creds('api'),
      CG__POSTGRES__URL: `postgres://toolmesh:${pgPassword}@127.0.0.1:${deadPort}/toolmesh?sslpassword=${pgPassword}`,
      CG__POSTGRES__CONNECT_TIMEOUT_MS: '1000',
      CG__LLM__API_KEY: llmKey,
      CG__LOG__LEVEL: 'debug',
    });
    const bodies: string[] = [];
    try {
      const ready = await fetch(`${api.url}/readyz`);
      const readyBody = await ready.text();
      bodies.push(readyBody);
      expect(ready.status).toBe(503);
      expect(JSON.parse(readyBody)).toEqual({
        status: 'unavailable',
        checks: { postgres: 'unavailable', nats: 'ok' },
      });
      expect(readyBody).not.toMatch(/ECONNREFUSED|127\.0\.0\.1|connect/);

      const projects = await fetch(`${api.url}/v1/projects`, {
        headers: { authorization: `Bearer ${admin}` },
      });
      const projectsBody = await projects.text();
      bodies.push(projectsBody);
      expect(projects.status).toBe(503);
      expect(JSON.parse(projectsBody).error).toEqual({
        code: 'unavailable',
        message: 'the database is unavailable; retry later',
      });
      // A wrong key whose lookup needs the database: the same answer, no driver text.
      const guess = await fetch(`${api.url}/v1/projects`, {
        headers: { authorization: 'Bearer tmk_wrong' },
      });
      bodies.push(await guess.text());
      expect(guess.status).toBe(503);
    } finally {
      expect(await api.stop()).toBe(0);
    }
    const logs = api.output();
    // The service did log the failures, and its configuration, masked.
    expect(logs).toContain('readiness: postgres unavailable');
    expect(logs).toContain('dependency unavailable');
    expect(logs).toContain(
      `postgres://toolmesh:***@127.0.0.1:${deadPort}/toolmesh?sslpassword=***`,
    );
    expect(logs).toContain('nats://***@127.0.0.1');
    // The seed of the api's NATS user (the creds' second half) is a secret too.
    const seed = /SU[A-Z2-7]{56}/.exec(mesh.api.nats.creds('api'))?.[0] ?? 'no seed';
    expect(seed).not.toBe('no seed');
    for (const secret of [pgPassword, natsToken, llmKey, admin, seed]) {
      expect(logs, 'a secret in the logs').not.toContain(secret);
      for (const body of bodies) expect(body).not.toContain(secret);
    }
  });
});

describe('an internal error', () => {
  let service: ToolService;
  const hostFile = join(REPO_ROOT, '.data', `missing-${randomUUID()}`, 'admin_key');

  beforeAll(async () => {
    const config = mesh.api.config;
    // A tool service of its own, as the skills service's user (what a tool service may publish).
    const bus = await createBus({
      nc: await mesh.api.nats.connect('skills'),
      root: config.nats.subject_root,
      logger: mesh.api.app.log,
    });
    await bus.provision(streamSettingsOf(config));
    // A handler that trips over a host file: Node's error quotes the full path.
    service = createToolService({
      bus,
      store: mesh.api.store,
      limits: limitsFromConfig(config.tools),
      instanceId: 'redteam',
      logger: mesh.api.app.log,
      target: 'hostfs',
      tools: [
        defineTool({
          name: 'read',
          description: 'reads a host file',
          args: z.object({}),
          handler: async () => readFile(hostFile, 'utf8'),
        }),
      ],
    });
    await service.start();
  });
  afterAll(async () => service?.stop(2_000));

  it('reaches the card without host paths', async () => {
    const reg = await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: {
        name: 'hostfs.read',
        description: 'served elsewhere',
        parameters: { type: 'object' },
      },
    });
    expect(reg.status, reg.raw).toBe(201);
    const res = await execute(a, 'hostfs.read', {});
    expect(res.status, res.raw).toBe(200);
    const error = res.body.card.content.error;
    expect(error.code).toBe('internal_error');
    expect(error.message).toMatch(/ENOENT.*<path>/);
    expect(res.raw).not.toContain(REPO_ROOT);
    expect(res.raw).not.toContain('.data');
    const execution = await mesh.request(
      'GET',
      `/v1/projects/${a.id}/executions/${res.body.execution.id}`,
      { key: a.key },
    );
    expect(execution.raw).not.toContain(REPO_ROOT);
    await stillServing(a);
  });
});
