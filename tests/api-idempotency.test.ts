// POST /executions sent again never runs a tool twice (issue 31): a request under the same
// tool_call_id or Idempotency-Key is answered from the same execution and card; other
// arguments under it are refused (422), a key whose first request is in progress too (409);
// another project's ids and keys are its own. A publish whose acknowledgement never came (the
// nats-server stopped with SIGSTOP) is answered 504 outcome_unknown with the call's id, and the
// call sent again under that id runs once. Runs are counted where they happen: at the upstream
// of an HTTP tool (POST, so not idempotent). The mesh runs on the deployment's authenticated
// NATS, each process as its own user.
import { randomBytes } from 'node:crypto';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { loadConfig } from '@toolmesh/config';
import { startTestNatsServer, type TestNatsServer } from '@toolmesh/testing';
import { createNames } from '@toolmesh/protocol';
import {
  expectError,
  startTestApi,
  type TestApi,
  type TestResponse,
} from '../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

let server: TestNatsServer;
let api: TestApi;
let tools: ToolsService;
let up: Upstream;
let admin: NatsConnection;
let a: { id: string; key: string };
let b: { id: string; key: string };

/** Short, so a stopped server makes the api give up on the acknowledgement soon. */
const ACK_TIMEOUT_MS = 400;

beforeAll(async () => {
  // A server of this file's own: the tests pause it.
  server = await startTestNatsServer();
  up = await startUpstream();
  api = await startTestApi(
    {
      CG__API__PUBLISH_ACK_TIMEOUT_MS: String(ACK_TIMEOUT_MS),
      CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
      CG__TOOLS__HEALTH_PORT: '0',
    },
    { natsServer: server },
  );
  tools = await startToolsService(
    loadConfig({ env: api.serviceEnv('tools') }),
    pino({ level: 'silent' }),
  );
  admin = await api.nats.connect('admin');
  a = await api.createProject();
  b = await api.createProject();
  for (const p of [a, b]) {
    const res = await api.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: {
        name: 'shop.charge',
        description: 'charges once per run: every run reaches the upstream',
        parameters: {
          type: 'object',
          properties: { tag: { type: 'string' }, amount: { type: 'number' } },
          required: ['tag'],
          additionalProperties: false,
        },
        kind: 'http',
        http: { method: 'POST', url: `${up.url}/echo/charge/{tag}` },
      },
    });
    expect(res.status, res.raw).toBe(201);
  }
});
afterAll(async () => {
  await tools?.stop(2_000);
  await api?.close();
  await server?.close();
  await up?.close();
});

const run = (
  body: Record<string, unknown>,
  o: { key?: string; project?: { id: string; key: string } } = {},
) => {
  const p = o.project ?? a;
  return api.request('POST', `/v1/projects/${p.id}/executions`, {
    key: p.key,
    body,
    ...(o.key !== undefined ? { headers: { 'idempotency-key': o.key } } : {}),
  });
};
const charge = (tag: string, extra: Record<string, unknown> = {}) => ({
  tool: 'shop.charge',
  arguments: { tag, amount: 5 },
  ...extra,
});
/** Runs of the tool with this tag: requests that reached the upstream. */
const runs = (tag: string) => up.hits(`/echo/charge/${tag}`);
const uniq = (what: string) => `${what}-${randomBytes(4).toString('hex')}`;

async function rows(project: string, toolCallId: string) {
  const res = await api.store.pool.query<{ executions: string; cards: string }>(
    `SELECT (SELECT count(*) FROM state.tool_executions
              WHERE project_id = $1 AND tool_call_id = $2) AS executions,
            (SELECT count(*) FROM cards
              WHERE project_id = $1 AND tool_call_id = $2 AND kind = 'tool.result') AS cards`,
    [project, toolCallId],
  );
  return { executions: Number(res.rows[0]?.executions), cards: Number(res.rows[0]?.cards) };
}

async function until(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 15_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting until ${what}`);
}

function expectSucceeded(res: TestResponse) {
  expect(res.status, res.raw).toBe(200);
  expect(res.body.execution.status).toBe('succeeded');
  expect(res.body.card.card_id).toBe(res.body.execution.card_id);
}

describe('Idempotency-Key', () => {
  it('the same key and request twice: one run, one execution, one card, the same answer', async () => {
    const tag = uniq('key');
    const key = uniq('order');
    const first = await run(charge(tag), { key });
    expectSucceeded(first);
    // The same request: arguments in another order and another wait are the same call.
    const again = await run(
      { wait_ms: 20_000, arguments: { amount: 5, tag }, tool: 'shop.charge' },
      { key: `"${key}"` },
    );
    expectSucceeded(again);
    expect(again.body.execution.id).toBe(first.body.execution.id);
    expect(again.body.card).toEqual(first.body.card);
    expect(runs(tag)).toBe(1);
    expect(await rows(a.id, first.body.execution.id)).toEqual({ executions: 1, cards: 1 });
  });

  it('the same key with another request is refused with 422, and nothing runs', async () => {
    const tag = uniq('key422');
    const key = uniq('order');
    expectSucceeded(await run(charge(tag), { key }));
    const other = await run(charge(tag, { arguments: { tag, amount: 6 } }), { key });
    expectError(other, 422, 'idempotency_key_reused');
    const otherChannel = await run(charge(tag, { channel: 'elsewhere' }), { key });
    expectError(otherChannel, 422, 'idempotency_key_reused');
    expect(runs(tag)).toBe(1);
  });

  it('a key whose first request is still in progress is a 409; once answered, it answers', async () => {
    const key = uniq('slow');
    const registered = await api.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: {
        name: 'shop.hang',
        description: 'an upstream that never answers',
        parameters: { type: 'object' },
        kind: 'http',
        http: { method: 'POST', url: `${up.url}/hang` },
      },
    });
    expect(registered.status, registered.raw).toBe(201);
    const hung = up.seen.filter((s) => s.path === '/hang').length;
    const first = run({ tool: 'shop.hang', timeout_ms: 3_000, wait_ms: 60_000 }, { key });
    await up.hanging(hung + 1);
    expectError(
      await run({ tool: 'shop.hang', timeout_ms: 3_000 }, { key }),
      409,
      'idempotency_key_in_use',
    );
    const answered = await first;
    expect(answered.status, answered.raw).toBe(200);
    expect(answered.body.execution.status).toBe('timeout');
    const again = await run({ tool: 'shop.hang', timeout_ms: 3_000 }, { key });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.card).toEqual(answered.body.card);
    expect(up.seen.filter((s) => s.path === '/hang').length).toBe(hung + 1);
  });

  it('a malformed key is a 400', async () => {
    const tooLong = 'k'.repeat(256);
    for (const key of [tooLong, '""', 'two words']) {
      expectError(await run(charge(uniq('bad')), { key }), 400, 'invalid_idempotency_key');
    }
  });
});

describe('tool_call_id chosen by the caller', () => {
  it('sent twice: one run, the same execution and card', async () => {
    const tag = uniq('own');
    const id = uniq('call');
    const first = await run(charge(tag, { tool_call_id: id }));
    expectSucceeded(first);
    expect(first.body.execution.id).toBe(id);
    const again = await run(charge(tag, { tool_call_id: id, wait: false }));
    expect(again.status, again.raw).toBe(200);
    expect(again.body.card).toEqual(first.body.card);
    expect(runs(tag)).toBe(1);
    expect(await rows(a.id, id)).toEqual({ executions: 1, cards: 1 });
  });

  it('the same id with other arguments is refused with 422', async () => {
    const tag = uniq('own422');
    const id = uniq('call');
    expectSucceeded(await run(charge(tag, { tool_call_id: id })));
    expectError(
      await run(charge(tag, { tool_call_id: id, arguments: { tag, amount: 7 } })),
      422,
      'tool_call_id_reused',
    );
    expect(runs(tag)).toBe(1);
  });
});

describe('another project', () => {
  it('using the same key and the same tool_call_id runs its own call and never sees this one', async () => {
    const tag = uniq('shared');
    const key = uniq('order');
    const id = uniq('call');
    const inA = await run(charge(tag, { tool_call_id: id }), { key });
    expectSucceeded(inA);
    const inB = await run(charge(tag, { tool_call_id: id }), { key, project: b });
    expectSucceeded(inB);
    expect(inB.body.execution.id).toBe(id);
    expect(inB.body.card.card_id).not.toBe(inA.body.card.card_id);
    // The same key alone (its own fresh id in each project) likewise.
    const keyOnly = uniq('order');
    const kA = await run(charge(tag), { key: keyOnly });
    const kB = await run(charge(tag), { key: keyOnly, project: b });
    expectSucceeded(kA);
    expectSucceeded(kB);
    expect(kB.body.execution.id).not.toBe(kA.body.execution.id);
    expect(runs(tag)).toBe(4);
    // Each project's execution under the id is its own, with its own card.
    expect(await rows(a.id, id)).toEqual({ executions: 1, cards: 1 });
    expect(await rows(b.id, id)).toEqual({ executions: 1, cards: 1 });
    const readA = await api.request('GET', `/v1/projects/${a.id}/executions/${id}`, {
      key: a.key,
    });
    expect(readA.body.card.card_id).toBe(inA.body.card.card_id);
  });
});

describe('an acknowledgement that never comes', () => {
  async function unknownOutcome(body: Record<string, unknown>, key?: string) {
    // The api's result subscription for this channel exists before the server stops.
    expectSucceeded(await run(charge(uniq('warm'))));
    let res: TestResponse;
    try {
      await server.pause();
      res = await run(body, key !== undefined ? { key } : {});
    } finally {
      server.resume();
    }
    expectError(res, 504, 'outcome_unknown');
    const id = res.body.error.details.tool_call_id as string;
    expect(id).toEqual(expect.any(String));
    expect(res.body.error.message).toContain(id);
    return id;
  }

  it('is answered 504 outcome_unknown with the tool_call_id; sent again under it, the call runs once', async () => {
    const tag = uniq('lost-ack');
    const id = await unknownOutcome(charge(tag));
    // The call was stored after all and runs once the server goes on.
    await until('the call ran', () => runs(tag) === 1);
    const again = await run(charge(tag, { tool_call_id: id }));
    expectSucceeded(again);
    expect(again.body.execution.id).toBe(id);
    expect(runs(tag)).toBe(1);
    expect(await rows(a.id, id)).toEqual({ executions: 1, cards: 1 });
  });

  it('sent again at once under the same Idempotency-Key, the call runs once', async () => {
    const tag = uniq('lost-ack-key');
    const key = uniq('order');
    const id = await unknownOutcome(charge(tag, { wait: false }), key);
    const again = await run(charge(tag), { key });
    expectSucceeded(again);
    expect(again.body.execution.id).toBe(id);
    expect(runs(tag)).toBe(1);
    expect(await rows(a.id, id)).toEqual({ executions: 1, cards: 1 });
  });
});

describe('a publish known not stored', () => {
  it('stays a plain 503 and leaves no execution behind', async () => {
    // The project's stream refuses every message (sealed): the server says so at once. (A
    // stream deleted outright the api makes again at the publish that finds none.)
    const names = createNames(api.config.nats.subject_root);
    const jsm = await jetstreamManager(admin);
    const stream = names.projectCommandStream(a.id);
    const info = await jsm.streams.info(stream);
    // Sealing is a stream setting nats.js's update type leaves out; the server takes it.
    await jsm.streams.update(stream, { ...info.config, sealed: true } as typeof info.config);
    const id = uniq('nostream');
    const res = await run(charge(uniq('nostream'), { tool_call_id: id }));
    expectError(res, 503, 'unavailable');
    const status = await api.request('GET', `/v1/projects/${a.id}/executions/${id}`, {
      key: a.key,
    });
    expectError(status, 404, 'not_found');
  });
});
