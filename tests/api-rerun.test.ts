// Running an execution again over HTTP (POST /executions/:id/rerun), as the console's Re-run
// button does: a new call with the same tool, arguments, channel and context, started by the
// key that asked; an execution that kept no arguments is refused, and another project's key
// can neither see nor re-run it.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pino } from 'pino';
import { loadConfig } from '@toolmesh/config';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { startSkillsService, type SkillsService } from '../services/skills/src/app.ts';

let api: TestApi;
let skills: SkillsService;
let a: { id: string; key: string };
let b: { id: string; key: string };
beforeAll(async () => {
  api = await startTestApi();
  skills = await startSkillsService(
    loadConfig({ env: api.serviceEnv('skills') }),
    pino({ level: 'silent' }),
  );
  a = await api.createProject();
  b = await api.createProject();
});
afterAll(async () => {
  await skills?.stop();
  await api?.close();
});

const post = (path: string, body: unknown, key = a.key, project = a.id) =>
  api.request('POST', `/v1/projects/${project}${path}`, { key, body });
const get = (path: string, key = a.key, project = a.id) =>
  api.request('GET', `/v1/projects/${project}${path}`, { key });

interface Detail {
  execution: Record<string, unknown>;
  card: { content: { result?: unknown } } | null;
}

async function finished(id: string): Promise<Detail> {
  for (let i = 0; i < 400; i++) {
    const res = await get(`/executions/${id}`);
    if (res.status === 200 && res.body.card) return res.body as Detail;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`execution ${id} did not finish`);
}

it('runs the call again under a new id, with its arguments, channel and context', async () => {
  const first = await post('/executions', {
    tool: 'builtin.echo',
    arguments: { text: 'again', n: 2 },
    channel: 'side',
    context: { session_id: 'rerun-1', metadata: { who: 'ada' } },
  });
  expect(first.status, first.raw).toBe(200);
  const old = first.body.execution as { id: string; key_id: string };

  const res = await post(`/executions/${old.id}/rerun`, {});
  expect(res.status, res.raw).toBe(202);
  const again = res.body.execution as { id: string };
  expect(again.id).not.toBe(old.id);
  const done = await finished(again.id);
  expect(done.execution).toMatchObject({
    tool: 'builtin.echo',
    channel: 'side',
    status: 'succeeded',
    arguments: { text: 'again', n: 2 },
    context: { session_id: 'rerun-1', metadata: { who: 'ada' } },
    key_id: old.key_id,
  });
  expect(done.card?.content.result).toEqual({ text: 'again', n: 2 });
  // The first execution is untouched.
  expect((await get(`/executions/${old.id}`)).body.execution.status).toBe('succeeded');
});

it('refuses an execution that kept no arguments, and an unknown one', async () => {
  await api.store.executions.enqueue({
    projectId: a.id,
    toolCallId: 'no-args-kept',
    channel: 'api',
    toolName: 'builtin.echo',
    target: 'builtin',
    instanceId: 'test',
  });
  const res = await post('/executions/no-args-kept/rerun', {});
  expect(res.status, res.raw).toBe(409);
  expect(res.body.error.message).toContain('did not keep its arguments');
  expect((await post('/executions/never-was/rerun', {})).status).toBe(404);
  expect((await post('/executions/bad%20id/rerun', {})).status).toBe(400);
});

it("another project's key can neither re-run an execution nor learn it exists", async () => {
  const first = await post('/executions', { tool: 'builtin.echo', arguments: { secret: 'a' } });
  expect(first.status, first.raw).toBe(200);
  const id = (first.body.execution as { id: string }).id;
  const before = (await get('/executions?limit=1')).body.total as number;

  const theirs = await post(`/executions/${id}/rerun`, {}, b.key, a.id);
  expect(theirs.status, theirs.raw).toBe(404);
  const inTheirs = await post(`/executions/${id}/rerun`, {}, b.key, b.id);
  expect(inTheirs.status, inTheirs.raw).toBe(404);
  expect(JSON.stringify(inTheirs.body)).not.toContain('secret');

  expect((await get('/executions?limit=1')).body.total).toBe(before);
  expect((await get('/executions?limit=1', b.key, b.id)).body.total).toBe(0);
});

it('a key of role caller re-runs only what it started, and the new call is its own', async () => {
  const made = await api.request('POST', `/v1/projects/${a.id}/keys`, {
    key: a.key,
    body: { name: 'rerun-caller', role: 'caller' },
  });
  expect(made.status, made.raw).toBe(201);
  const caller = { key: made.body.key as string, keyId: made.body.key_id as string };

  const admins = await post('/executions', { tool: 'builtin.echo', arguments: { by: 'admin' } });
  const adminsId = (admins.body.execution as { id: string }).id;
  expect((await post(`/executions/${adminsId}/rerun`, {}, caller.key)).status).toBe(404);

  const own = await post(
    '/executions',
    { tool: 'builtin.echo', arguments: { by: 'caller' } },
    caller.key,
  );
  expect(own.status, own.raw).toBe(200);
  const res = await post(
    `/executions/${(own.body.execution as { id: string }).id}/rerun`,
    {},
    caller.key,
  );
  expect(res.status, res.raw).toBe(202);
  expect(res.body.execution).toMatchObject({ key_id: caller.keyId });
  const done = await finished((res.body.execution as { id: string }).id);
  expect(done.execution).toMatchObject({ key_id: caller.keyId, arguments: { by: 'caller' } });
});

it("keeps the call's deadline, and takes another one from the body", async () => {
  // builtin.sleep of 1.5 s under a 300 ms deadline ends `timeout`; under the tool's default
  // (an hour) it would succeed.
  const first = await post('/executions', {
    tool: 'builtin.sleep',
    arguments: { ms: 1500 },
    timeout_ms: 300,
  });
  expect(first.status, first.raw).toBe(200);
  expect(first.body.execution).toMatchObject({ status: 'timeout', timeout_ms: 300 });
  const old = (first.body.execution as { id: string }).id;

  const again = await post(`/executions/${old}/rerun`, {});
  expect(again.status, again.raw).toBe(202);
  const kept = await finished((again.body.execution as { id: string }).id);
  expect(kept.execution).toMatchObject({ status: 'timeout', timeout_ms: 300 });

  const longer = await post(`/executions/${old}/rerun`, { timeout_ms: 60_000 });
  expect(longer.status, longer.raw).toBe(202);
  const done = await finished((longer.body.execution as { id: string }).id);
  expect(done.execution).toMatchObject({ status: 'succeeded', timeout_ms: 60_000 });
  expect(done.card?.content.result).toMatchObject({ slept_ms: expect.any(Number) });

  for (const timeout_ms of [0, -5, 1.5, 'soon', 3_600_001]) {
    const bad = await post(`/executions/${old}/rerun`, { timeout_ms });
    expect(bad.status, `${String(timeout_ms)}: ${bad.raw}`).toBe(400);
  }
  expect((await post(`/executions/${old}/rerun`, { timeout: 5 })).status).toBe(400);
});

it('an execution that asked for no deadline has none recorded, and its re-run neither', async () => {
  const first = await post('/executions', { tool: 'builtin.echo', arguments: { n: 1 } });
  expect(first.body.execution).toMatchObject({ status: 'succeeded', timeout_ms: null });
  const res = await post(`/executions/${(first.body.execution as { id: string }).id}/rerun`, {});
  const done = await finished((res.body.execution as { id: string }).id);
  expect(done.execution).toMatchObject({ status: 'succeeded', timeout_ms: null });
});
