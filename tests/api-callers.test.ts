// Callers and keys through the api, with the skills service running builtin.echo and
// builtin.sleep: a call's context is kept on its execution and filters the history; each
// execution records the API key that started it; a key of role `caller` calls tools and starts
// tasks, sees and cancels only what it started, and is refused (403 forbidden) everything else;
// another project's keys (either role) are refused every new surface with 404.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { jetstream } from '@nats-io/jetstream';
import { createClient } from '@toolmesh/client';
import { createSubjects, errorCodeOf } from '@toolmesh/protocol';
import { loadConfig } from '@toolmesh/config';
import {
  ADMIN_KEY,
  expectError,
  startTestApi,
  type TestApi,
} from '../services/api/src/test/support.ts';
import { startSkillsService, type SkillsService } from '../services/skills/src/app.ts';

let api: TestApi;
let skills: SkillsService;
let a: { id: string; key: string; keyId: string };
let b: { id: string; key: string };
let caller: { key: string; keyId: string };
let callerB: { key: string; keyId: string };

async function keyIdOf(project: string, key: string): Promise<string> {
  const res = await api.request('GET', `/v1/projects/${project}/keys`, { key });
  expect(res.status, res.raw).toBe(200);
  return res.body.keys[0].key_id as string;
}

async function newKey(project: string, key: string, role?: string) {
  const res = await api.request('POST', `/v1/projects/${project}/keys`, {
    key,
    body: { name: `k-${role ?? 'default'}`, ...(role ? { role } : {}) },
  });
  expect(res.status, res.raw).toBe(201);
  return { key: res.body.key as string, keyId: res.body.key_id as string, role: res.body.role };
}

beforeAll(async () => {
  api = await startTestApi();
  skills = await startSkillsService(
    loadConfig({ env: api.serviceEnv('skills') }),
    pino({ level: 'silent' }),
  );
  const pa = await api.createProject();
  a = { ...pa, keyId: await keyIdOf(pa.id, pa.key) };
  b = await api.createProject();
  caller = await newKey(a.id, a.key, 'caller');
  callerB = await newKey(b.id, b.key, 'caller');
  await api.store.pool.query(
    `INSERT INTO resource.agents (project_id, agent_id, name) VALUES ($1, 'ada', 'Ada')`,
    [a.id],
  );
}, 60_000);
afterAll(async () => {
  await skills?.stop();
  await api?.close();
});

const call = (body: Record<string, unknown>, key: string, project = a.id) =>
  api.request('POST', `/v1/projects/${project}/executions`, { key, body });
const get = (path: string, key: string, project = a.id) =>
  api.request('GET', `/v1/projects/${project}${path}`, { key });
const ids = (res: { body: { executions: { id: string }[] } }) =>
  res.body.executions.map((e) => e.id).sort();

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 20_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting until ${what}`);
}

describe('call context', () => {
  it('is kept on the execution, shown with it, and filters the history by session_id', async () => {
    const session = `chat-${randomUUID()}`;
    const context = { session_id: session, metadata: { user: 'u-42', locale: 'de' } };
    const one = await call({ tool: 'builtin.echo', arguments: { n: 1 }, context }, a.key);
    expect(one.status, one.raw).toBe(200);
    expect(one.body.execution.context).toEqual({
      session_id: session,
      metadata: { user: 'u-42', locale: 'de' },
    });
    const two = await call(
      { tool: 'builtin.echo', arguments: { n: 2 }, context: { session_id: session } },
      a.key,
    );
    expect(two.status, two.raw).toBe(200);
    const other = await call({ tool: 'builtin.echo', arguments: { n: 3 } }, a.key);
    expect(other.status, other.raw).toBe(200);
    expect(other.body.execution.context).toBeNull();

    const shown = await get(`/executions/${one.body.execution.id}`, a.key);
    expect(shown.body.execution.context).toEqual(one.body.execution.context);

    const history = await get(`/executions?session_id=${encodeURIComponent(session)}`, a.key);
    expect(history.status, history.raw).toBe(200);
    expect(ids(history)).toEqual([one.body.execution.id, two.body.execution.id].sort());
    expect(history.body.total).toBe(2);
    const none = await get('/executions?session_id=nobody-has-this', a.key);
    expect(none.body).toMatchObject({ executions: [], total: 0 });
  });

  it('a context from the bus (SDK) is kept the same way', async () => {
    const client = createClient({ nc: api.nc, root: api.config.nats.subject_root });
    try {
      const session = `bus-${randomUUID()}`;
      const r = await client.callTool({
        project: a.id,
        channel: 'sdk',
        tool: 'builtin.echo',
        arguments: { via: 'bus' },
        context: { session_id: session, metadata: { source: 'sdk' } },
      });
      expect(r.status).toBe('succeeded');
      const history = await get(`/executions?session_id=${session}`, a.key);
      expect(ids(history)).toEqual([r.tool_call_id]);
      expect(history.body.executions[0].context).toEqual({
        session_id: session,
        metadata: { source: 'sdk' },
      });
      // Over the bus nobody authenticated with an API key: no key is recorded.
      expect(history.body.executions[0].key_id).toBeNull();

      // Too large: the SDK refuses it before sending; a publisher without the SDK gets a failed
      // result saying why, and nothing runs.
      let refused: unknown;
      try {
        await client.publishToolCall({
          project: a.id,
          channel: 'sdk',
          tool: 'builtin.echo',
          context: { metadata: { blob: 'x'.repeat(5_000) } },
        });
      } catch (err) {
        refused = err;
      }
      expect(errorCodeOf(refused)).toBe('invalid_message');
      const id = randomUUID();
      const subject = createSubjects(api.config.nats.subject_root).toolCall({
        project: a.id,
        channel: 'raw',
        target: 'builtin',
        tool: 'echo',
      });
      await jetstream(api.nc).publish(
        subject,
        JSON.stringify({
          v: 1,
          tool_call_id: id,
          tool_name: 'builtin.echo',
          arguments: {},
          context: { session_id: 'raw', metadata: { blob: 'x'.repeat(5_000) } },
        }),
      );
      await until(
        'the oversize call is filed failed',
        async () => (await get(`/executions/${id}`, a.key)).body?.execution?.status === 'failed',
      );
      const filed = await get(`/executions/${id}`, a.key);
      expect(filed.body.card.content.error.code).toBe('invalid_message');
      expect(filed.body.card.content.error.message).toContain('at most 4096 bytes');
      expect(filed.body.execution.context).toBeNull();
    } finally {
      await client.close();
    }
  });

  it('refuses a context over 4096 bytes, a bad session id and unknown fields with 400', async () => {
    const before = (await get('/executions', a.key)).body.total;
    const big = await call(
      { tool: 'builtin.echo', context: { metadata: { blob: 'x'.repeat(5_000) } } },
      a.key,
    );
    expectError(big, 400, 'invalid_request');
    expect(big.body.error.message).toContain('at most 4096 bytes');
    const control = await call({ tool: 'builtin.echo', context: { session_id: 'a\nb' } }, a.key);
    expectError(control, 400, 'invalid_request');
    expect(control.body.error.message).toContain('session_id');
    const long = await call(
      { tool: 'builtin.echo', context: { session_id: 'x'.repeat(129) } },
      a.key,
    );
    expectError(long, 400, 'invalid_request');
    expectError(
      await call({ tool: 'builtin.echo', context: { session: 'typo' } }, a.key),
      400,
      'invalid_request',
    );
    expect((await get('/executions', a.key)).body.total).toBe(before);
  });
});

describe('who started it', () => {
  it('an execution records the API key that started it, never the key itself', async () => {
    const res = await call({ tool: 'builtin.echo', arguments: {} }, a.key);
    expect(res.body.execution.key_id).toBe(a.keyId);
    expect(res.body.execution.credential_id).toBeNull();
    expect(res.raw).not.toContain(a.key);
    const admin = await call({ tool: 'builtin.echo', arguments: {} }, ADMIN_KEY);
    expect(admin.body.execution.key_id).toBeNull();
    const byKey = await get(`/executions?key_id=${a.keyId}`, a.key);
    expect(ids(byKey)).toContain(res.body.execution.id);
    expect(ids(byKey)).not.toContain(admin.body.execution.id);
  });
});

describe('a key of role caller', () => {
  it('is created with its role; keys without one stay admin', async () => {
    const keys = await get('/keys', a.key);
    const roles = Object.fromEntries(
      keys.body.keys.map((k: { key_id: string; role: string }) => [k.key_id, k.role]),
    );
    expect(roles[a.keyId]).toBe('admin');
    expect(roles[caller.keyId]).toBe('caller');
    expectError(
      await api.request('POST', `/v1/projects/${a.id}/keys`, {
        key: a.key,
        body: { name: 'x', role: 'root' },
      }),
      400,
      'invalid_request',
    );
  });

  it('calls tools and reads the registry, and sees only its own executions', async () => {
    const mine = await call({ tool: 'builtin.echo', arguments: { who: 'caller' } }, caller.key);
    expect(mine.status, mine.raw).toBe(200);
    expect(mine.body.execution.key_id).toBe(caller.keyId);
    const theirs = await call({ tool: 'builtin.echo', arguments: { who: 'admin' } }, a.key);

    expect((await get('/tools', caller.key)).status).toBe(200);
    expect((await get('/tools/builtin.echo', caller.key)).status).toBe(200);
    expect((await get('', caller.key)).status).toBe(200);

    const history = await get('/executions', caller.key);
    expect(history.status, history.raw).toBe(200);
    expect(ids(history)).toEqual([mine.body.execution.id]);
    expect(history.body.total).toBe(1);
    expect((await get(`/executions/${mine.body.execution.id}`, caller.key)).status).toBe(200);
    expectError(await get(`/executions/${theirs.body.execution.id}`, caller.key), 404, 'not_found');
    expectError(
      await api.request(
        'POST',
        `/v1/projects/${a.id}/executions/${theirs.body.execution.id}/cancel`,
        {
          key: caller.key,
        },
      ),
      404,
      'not_found',
    );
    expectError(await get(`/executions?key_id=${a.keyId}`, caller.key), 403, 'forbidden');
    // The admin key of the project sees both.
    const all = await get('/executions', a.key);
    expect(ids(all)).toEqual(
      expect.arrayContaining([mine.body.execution.id, theirs.body.execution.id]),
    );
  });

  it('cancels its own running call and sees only its own active ones', async () => {
    const sleep = (key: string) =>
      call({ tool: 'builtin.sleep', arguments: { ms: 30_000 }, wait: false }, key);
    const mine = (await sleep(caller.key)).body.execution.id as string;
    const theirs = (await sleep(a.key)).body.execution.id as string;
    await until('both sleeps run', async () => {
      const all = await get('/executions/active', a.key);
      return (
        all.body.executions.filter((e: { status: string }) => e.status === 'running').length === 2
      );
    });
    const active = await get('/executions/active', caller.key);
    expect(active.body.executions.map((e: { id: string }) => e.id)).toEqual([mine]);
    const cancel = await api.request('POST', `/v1/projects/${a.id}/executions/${mine}/cancel`, {
      key: caller.key,
      body: { reason: 'mine to stop' },
    });
    expect(cancel.status, cancel.raw).toBe(202);
    await until(
      'the caller sleep is canceled',
      async () =>
        (await get(`/executions/${mine}`, caller.key)).body.execution.status === 'canceled',
    );
    // The other call goes on; its owner stops it.
    expect((await get(`/executions/${theirs}`, a.key)).body.execution.status).toBe('running');
    const stop = await api.request('POST', `/v1/projects/${a.id}/executions/${theirs}/cancel`, {
      key: a.key,
    });
    expect(stop.status, stop.raw).toBe(202);
  });

  it('starts tasks and reads and cancels only its own; it sees the executions of its tasks', async () => {
    const start = (key: string) =>
      api.request('POST', `/v1/projects/${a.id}/agents/ada/tasks`, { key, body: { input: 'hi' } });
    const mine = await start(caller.key);
    expect(mine.status, mine.raw).toBe(202);
    const theirs = await start(a.key);
    expect(theirs.status, theirs.raw).toBe(202);
    expect((await get(`/tasks/${mine.body.task_id}`, caller.key)).status).toBe(200);
    expectError(await get(`/tasks/${theirs.body.task_id}`, caller.key), 404, 'not_found');
    expectError(
      await api.request('POST', `/v1/projects/${a.id}/tasks/${theirs.body.task_id}/cancel`, {
        key: caller.key,
        body: {},
      }),
      404,
      'not_found',
    );

    // A call the agent makes for the caller's task (as the agent worker publishes it: with the
    // turn in its headers) shows in the caller's history. The turn row stands in for the worker.
    const turn = randomUUID();
    await api.store.pool.query(
      `INSERT INTO state.turns (turn_id, project_id, agent_id, channel, task_id)
       VALUES ($1, $2, 'ada', 'api', $3)`,
      [turn, a.id, mine.body.task_id],
    );
    const client = createClient({ nc: api.nc, root: api.config.nats.subject_root });
    try {
      const r = await client.callTool({
        project: a.id,
        channel: 'api',
        tool: 'builtin.echo',
        arguments: { for: 'task' },
        turnId: turn,
      });
      expect(r.status).toBe('succeeded');
      const history = await get(`/executions?task=${mine.body.task_id}`, caller.key);
      expect(ids(history)).toEqual([r.tool_call_id]);
      expect((await get(`/executions/${r.tool_call_id}`, caller.key)).status).toBe(200);
    } finally {
      await client.close();
    }

    const cancel = await api.request(
      'POST',
      `/v1/projects/${a.id}/tasks/${mine.body.task_id}/cancel`,
      { key: caller.key, body: {} },
    );
    expect(cancel.status, cancel.raw).toBe(200);
    expect(cancel.body.status).toBe('canceled');
  });

  it('is refused everything else with 403 forbidden', async () => {
    const refused: [string, string, unknown?][] = [
      ['POST', '/tools', { name: 'web.get', kind: 'http', http: { url: 'https://example.com' } }],
      ['PATCH', '/tools/builtin.echo', { enabled: false }],
      ['DELETE', '/tools/builtin.echo'],
      ['GET', '/secrets'],
      ['PUT', '/secrets/token', { value: 's3cret' }],
      ['GET', '/keys'],
      ['POST', '/keys', { name: 'escalate', role: 'admin' }],
      ['DELETE', `/keys/${a.keyId}`],
      ['GET', '/executions/metrics'],
      ['GET', '/agents'],
      ['GET', '/bus-credentials'],
    ];
    for (const [method, path, body] of refused) {
      const res = await api.request(method as 'GET', `/v1/projects/${a.id}${path}`, {
        key: caller.key,
        ...(body !== undefined ? { body } : {}),
      });
      expectError(res, 403, 'forbidden');
      expect(res.body.error.message, `${method} ${path}`).toContain('role caller');
    }
    // Nothing changed: the echo tool is still enabled and the admin key still works.
    const echo = await get('/tools/builtin.echo', a.key);
    expect(echo.body.enabled).toBe(true);
    expect((await get('/keys', a.key)).body.keys).toHaveLength(2);
  });
});

describe("another project's keys", () => {
  it('are refused every new surface with 404, whatever their role', async () => {
    const own = await call(
      { tool: 'builtin.echo', arguments: {}, context: { session_id: 'shared-name' } },
      caller.key,
    );
    const task = await api.request('POST', `/v1/projects/${a.id}/agents/ada/tasks`, {
      key: caller.key,
      body: { input: 'mine' },
    });
    for (const key of [b.key, callerB.key]) {
      const refused = [
        await get('/executions?session_id=shared-name', key),
        await get(`/executions?key_id=${caller.keyId}`, key),
        await get(`/executions/${own.body.execution.id}`, key),
        await get('/executions/active', key),
        await get(`/tasks/${task.body.task_id}`, key),
        await call({ tool: 'builtin.echo', context: { session_id: 'x' } }, key),
        await api.request('POST', `/v1/projects/${a.id}/keys`, {
          key,
          body: { name: 'x', role: 'caller' },
        }),
        await api.request('POST', `/v1/projects/${a.id}/agents/ada/tasks`, {
          key,
          body: { input: 'x' },
        }),
      ];
      for (const res of refused) expectError(res, 404, 'not_found');
    }
    // B's own history with the same session name holds nothing of A's.
    const inB = await get('/executions?session_id=shared-name', b.key, b.id);
    expect(inB.body).toMatchObject({ executions: [], total: 0 });
    // A's caller key reaches nothing of B either.
    expectError(await get('/executions', caller.key, b.id), 404, 'not_found');
  });
});
