// Tools run over HTTP through the whole mesh: the api publishes, the skills service runs
// builtin.echo and builtin.sleep, and status, cancel, history, metrics, active executions and
// cards read back what happened. Another project's key is refused everything with a 404.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createClient } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import {
  ADMIN_KEY,
  startTestApi,
  type TestApi,
  type TestResponse,
  expectError,
} from '../services/api/src/test/support.ts';
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

const run = (body: Record<string, unknown>, key = a.key, project = a.id) =>
  api.request('POST', `/v1/projects/${project}/executions`, { key, body });
const get = (path: string, key = a.key, project = a.id) =>
  api.request('GET', `/v1/projects/${project}${path}`, { key });

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 10_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting until ${what}`);
}

// Filled as the tests run: the history and metrics tests count on exactly these calls in a.
const ids = { echo: '', echoAsync: '', sleep: '', card: '' };

describe('running tools', () => {
  it('builtin.echo over HTTP answers 200 with the execution and its result card', async () => {
    const res = await run({ tool: 'builtin.echo', arguments: { text: 'hello', n: 3 } });
    expect(res.status, res.raw).toBe(200);
    const { execution, card } = res.body;
    expect(execution).toMatchObject({
      tool: 'builtin.echo',
      target: 'builtin',
      channel: 'api',
      status: 'succeeded',
      attempts: 1,
    });
    expect(execution.duration_ms).toEqual(expect.any(Number));
    expect(Date.parse(execution.finished_at)).toBeGreaterThanOrEqual(
      Date.parse(execution.created_at),
    );
    expect(card.card_id).toBe(execution.card_id);
    expect(card.content).toMatchObject({ status: 'succeeded', result: { text: 'hello', n: 3 } });
    ids.echo = execution.id;
    ids.card = card.card_id;
  });

  it('wait: false answers 202 at once; the status then turns succeeded with its card', async () => {
    const res = await run({
      tool: 'builtin.echo',
      arguments: { i: 2 },
      wait: false,
      channel: 'side',
    });
    expect(res.status, res.raw).toBe(202);
    expect(['queued', 'running', 'succeeded']).toContain(res.body.execution.status);
    ids.echoAsync = res.body.execution.id;
    let status: TestResponse | undefined;
    await until('the async echo finished', async () => {
      status = await get(`/executions/${ids.echoAsync}`);
      return status.body.execution.status === 'succeeded';
    });
    expect(status?.body.card.content.result).toEqual({ i: 2 });
    expect(status?.body.execution.channel).toBe('side');
  });

  it('a running builtin.sleep is listed as active (promoted from queued on its first attempt), and cancelling it ends it canceled', async () => {
    const res = await run({
      tool: 'builtin.sleep',
      arguments: { ms: 30_000 },
      wait: false,
      timeout_ms: 60_000,
    });
    expect(res.status, res.raw).toBe(202);
    ids.sleep = res.body.execution.id;
    await until(
      'the sleep is running',
      async () => (await get(`/executions/${ids.sleep}`)).body.execution.status === 'running',
    );
    const active = await get('/executions/active');
    expect(active.status).toBe(200);
    expect(active.body.executions.map((e: { id: string }) => e.id)).toEqual([ids.sleep]);
    expect(active.body.executions[0]).toMatchObject({
      status: 'running',
      tool: 'builtin.sleep',
      attempts: 1,
    });
    expect(active.body.executions[0].elapsed_ms).toBeGreaterThanOrEqual(0);

    const cancel = await api.request(
      'POST',
      `/v1/projects/${a.id}/executions/${ids.sleep}/cancel`,
      {
        key: a.key,
        body: { reason: 'test says stop' },
      },
    );
    expect(cancel.status, cancel.raw).toBe(202);
    let status: TestResponse | undefined;
    await until('the sleep is canceled', async () => {
      status = await get(`/executions/${ids.sleep}`);
      return status.body.execution.status === 'canceled';
    });
    expect(status?.body.execution.error_code).toBe('canceled');
    expect(status?.body.card.content).toMatchObject({
      status: 'canceled',
      error: { code: 'canceled', message: 'canceled: test says stop' },
    });
    expect((await get('/executions/active')).body).toEqual({ executions: [], count: 0 });

    const again = await api.request('POST', `/v1/projects/${a.id}/executions/${ids.sleep}/cancel`, {
      key: a.key,
    });
    expectError(again, 409, 'conflict');
    expect(again.body.error.details).toEqual({ status: 'canceled' });
  });

  it('a wait that runs out answers 202 with the execution still running', async () => {
    const c = await api.createProject();
    const res = await run(
      { tool: 'builtin.sleep', arguments: { ms: 1_500 }, wait_ms: 1_000 },
      c.key,
      c.id,
    );
    expect(res.status, res.raw).toBe(202);
    expect(['queued', 'running']).toContain(res.body.execution.status);
    expect(res.body.card).toBeNull();
  });

  it('refuses bad input before anything is published', async () => {
    const before = (await get('/executions')).body.total;
    const bad = await run({ tool: 'builtin.sleep', arguments: { ms: 'long' } });
    expectError(bad, 400, 'invalid_arguments');
    expect(bad.body.error.details.issues).toContainEqual(
      expect.objectContaining({ path: '/ms', keyword: 'type' }),
    );
    const missing = await run({ tool: 'builtin.sleep', arguments: {} });
    expectError(missing, 400, 'invalid_arguments');
    expect(missing.body.error.details.issues[0]).toMatchObject({
      path: '/ms',
      keyword: 'required',
    });
    expectError(await run({ tool: 'nope.missing', arguments: {} }), 404, 'not_found');
    expectError(await run({ tool: 'not-a-tool-name' }), 400, 'invalid_request');
    expectError(await run({ tool: 'builtin.echo', wait_ms: 10 }), 400, 'invalid_request');
    expectError(await run({ tool: 'builtin.echo', wait_ms: 10 * 60_000 }), 400, 'invalid_request');
    expectError(await run({ tool: 'builtin.echo', timeout_ms: 0 }), 400, 'invalid_request');
    expectError(await run({ tool: 'builtin.echo', surprise: 1 }), 400, 'invalid_request');
    expect((await get('/executions')).body.total).toBe(before);
  });

  it('a disabled tool is refused', async () => {
    const c = await api.createProject();
    await api.store.pool.query(
      `UPDATE resource.tools SET enabled = false WHERE project_id = $1 AND name = 'builtin.echo'`,
      [c.id],
    );
    expectError(await run({ tool: 'builtin.echo' }, c.key, c.id), 400, 'tool_disabled');
  });

  it('a reserved tool switched off is refused on the bus path too, and runs again once on', async () => {
    const c = await api.createProject();
    const client = createClient({ nc: api.nc, root: api.config.nats.subject_root });
    const echo = () =>
      client.callTool({ project: c.id, channel: 'bus', tool: 'builtin.echo', arguments: { x: 1 } });
    try {
      expect((await echo()).status).toBe('succeeded');
      const url = `/v1/projects/${c.id}/tools/builtin.echo`;
      await api.request('PATCH', url, { key: c.key, body: { enabled: false } });
      expect((await echo()).content.error?.code).toBe('tool_disabled');
      await api.request('PATCH', url, { key: c.key, body: { enabled: true } });
      expect((await echo()).status).toBe('succeeded');
    } finally {
      await client.close();
    }
  });

  it('unknown executions are 404, bad ids 400', async () => {
    expectError(await get('/executions/no-such-call'), 404, 'not_found');
    expectError(
      await api.request('POST', `/v1/projects/${a.id}/executions/no-such-call/cancel`, {
        key: a.key,
      }),
      404,
      'not_found',
    );
    expectError(await get('/executions/bad.id'), 400, 'invalid_id');
  });
});

describe('history, metrics, cards', () => {
  it('history lists both calls, newest first, with filters, totals and average duration', async () => {
    const all = await get('/executions');
    expect(all.status, all.raw).toBe(200);
    expect(all.body.executions.map((e: { id: string }) => e.id)).toEqual([
      ids.sleep,
      ids.echoAsync,
      ids.echo,
    ]);
    expect(all.body).toMatchObject({
      total: 3,
      next_cursor: null,
      by_status: { succeeded: 2, canceled: 1, running: 0 },
    });
    expect(all.body.avg_duration_ms).toBeGreaterThan(0);

    const echo = await get('/executions?tool=builtin.echo');
    expect(echo.body.total).toBe(2);
    expect(echo.body.executions.every((e: { tool: string }) => e.tool === 'builtin.echo')).toBe(
      true,
    );
    const canceled = await get('/executions?status=canceled');
    expect(canceled.body.executions.map((e: { id: string }) => e.id)).toEqual([ids.sleep]);
    expect((await get('/executions?channel=side')).body.total).toBe(1);

    const { rows } = await api.store.pool.query<{ category: string }>(
      `SELECT category FROM resource.tools WHERE project_id = $1 AND name = 'builtin.echo'`,
      [a.id],
    );
    const byCategory = await get(`/executions?category=${rows[0]!.category}&tool=builtin.echo`);
    expect(byCategory.body.total).toBe(2);
    expect(byCategory.body.executions[0].category).toBe(rows[0]!.category);
    expect((await get('/executions?category=no-such-category')).body.total).toBe(0);
    const future = new Date(Date.now() + 3_600_000).toISOString();
    expect((await get(`/executions?from=${future}`)).body.total).toBe(0);
    expect((await get(`/executions?to=${future}`)).body.total).toBe(3);
    expectError(
      await get(`/executions?from=${future}&to=${new Date().toISOString()}`),
      400,
      'invalid_request',
    );
  });

  it('history pages with an opaque cursor, one row at a time', async () => {
    const seen: string[] = [];
    let cursor: string | null = null;
    do {
      const page: TestResponse = await get(
        `/executions?limit=1${cursor ? `&cursor=${cursor}` : ''}`,
      );
      expect(page.status, page.raw).toBe(200);
      expect(page.body.total).toBe(3);
      seen.push(...page.body.executions.map((e: { id: string }) => e.id));
      cursor = page.body.next_cursor;
    } while (cursor && seen.length < 10);
    expect(seen).toEqual([ids.sleep, ids.echoAsync, ids.echo]);
    expectError(await get('/executions?cursor=not-a-cursor'), 400, 'invalid_request');
  });

  it('metrics count both tools, their rates and durations', async () => {
    const res = await get('/executions/metrics');
    expect(res.status, res.raw).toBe(200);
    const m = res.body;
    expect(m).toMatchObject({ total: 3, finished: 3, by_status: { succeeded: 2, canceled: 1 } });
    expect(m.success_rate).toBeCloseTo(2 / 3);
    expect(m.failure_rate).toBeCloseTo(1 / 3);
    expect(m.failure_rates).toMatchObject({ failed: 0, timeout: 0 });
    expect(m.failure_rates.canceled).toBeCloseTo(1 / 3);
    expect(m.p95_duration_ms).toBeGreaterThanOrEqual(m.avg_duration_ms as number);
    expect(m.most_used).toEqual([
      { tool: 'builtin.echo', count: 2, success_rate: 1, avg_duration_ms: expect.any(Number) },
      { tool: 'builtin.sleep', count: 1, success_rate: 0, avg_duration_ms: expect.any(Number) },
    ]);
    const empty = await get(
      `/executions/metrics?from=${new Date(Date.now() + 60_000).toISOString()}`,
    );
    expect(empty.body).toMatchObject({
      total: 0,
      success_rate: null,
      avg_duration_ms: null,
      most_used: [],
    });
  });

  it('a card is read by id, by its own project or the admin only', async () => {
    const res = await get(`/cards/${ids.card}`);
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      card_id: ids.card,
      kind: 'tool.result',
      tool_call_id: ids.echo,
      content: { status: 'succeeded' },
    });
    expect((await get(`/cards/${ids.card}`, ADMIN_KEY)).status).toBe(200);
    expectError(await get(`/cards/${ids.card}`, b.key), 404, 'not_found');
    expectError(await get(`/cards/${ids.card}`, b.key, b.id), 404, 'not_found');
    expectError(await get('/cards/not-a-uuid'), 400, 'invalid_id');
  });

  it("another project's key gets 404 for every execution route", async () => {
    for (const path of [
      '/executions',
      `/executions/${ids.echo}`,
      '/executions/metrics',
      '/executions/active',
    ]) {
      expectError(await get(path, b.key), 404, 'not_found');
    }
    expectError(await run({ tool: 'builtin.echo' }, b.key), 404, 'not_found');
    expectError(
      await api.request('POST', `/v1/projects/${a.id}/executions/${ids.echo}/cancel`, {
        key: b.key,
      }),
      404,
      'not_found',
    );
    // Through its own project's path, a's execution does not exist for b.
    expectError(await get(`/executions/${ids.echo}`, b.key, b.id), 404, 'not_found');
    expect((await get('/executions', b.key, b.id)).body.total).toBe(0);
  });
});
