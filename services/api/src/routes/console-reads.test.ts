// The console's api surface: the per-minute metrics, task and artifact lists, a call's
// arguments, the executions filter by agent, the live events over SSE, and /console itself
// (served with a strict Content-Security-Policy). Another project's key reaches none of it.
import { randomUUID } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError, startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
let base: string;
beforeAll(async () => {
  api = await startTestApi();
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  await api?.close();
});

async function execution(
  project: string,
  o: { tool: string; status: string; agent?: string; ms: number; ago: string },
) {
  const id = randomUUID();
  await api.store.pool.query(
    `INSERT INTO state.tool_executions
       (project_id, tool_call_id, channel, tool_name, target, agent_id, status, instance_id,
        started_at, finished_at, duration_ms)
     VALUES ($1, $2, 'main', $3, split_part($3, '.', 1), $4, $5, 'i-1',
       date_trunc('minute', now()) - $6::interval, date_trunc('minute', now()) - $6::interval, $7)`,
    [project, id, o.tool, o.agent ?? null, o.status, o.ago, o.ms],
  );
  return id;
}

it('counts calls per minute with p50/p95 and the failure rate by tool', async () => {
  const p = await api.createProject();
  for (const ms of [10, 20, 30, 40]) {
    await execution(p.id, { tool: 'web.fetch', status: 'succeeded', ms, ago: '5 minutes' });
  }
  await execution(p.id, { tool: 'web.fetch', status: 'failed', ms: 50, ago: '5 minutes' });
  await execution(p.id, { tool: 'img.draw', status: 'timeout', ms: 900, ago: '2 minutes' });
  await execution(p.id, { tool: 'img.draw', status: 'succeeded', ms: 100, ago: '3 hours' });

  const res = await api.request('GET', `/v1/projects/${p.id}/executions/per-minute?minutes=60`, {
    key: p.key,
  });
  expect(res.status, res.raw).toBe(200);
  expect(res.body.minutes).toHaveLength(2);
  const [first, second] = res.body.minutes;
  expect(first).toMatchObject({ calls: 5, failed: 1, p50_ms: 30 });
  expect(first.p95_ms).toBeCloseTo(48, 5);
  expect(second).toMatchObject({ calls: 1, failed: 1, p50_ms: 900 });
  expect(res.body.by_tool).toEqual([
    { tool: 'web.fetch', calls: 5, failed: 1, failure_rate: 0.2 },
    { tool: 'img.draw', calls: 1, failed: 1, failure_rate: 1 },
  ]);

  const bad = await api.request('GET', `/v1/projects/${p.id}/executions/per-minute?minutes=0`, {
    key: p.key,
  });
  expectError(bad, 400, 'invalid_request');
});

it("says when the sandbox-reaper's latest pass began", async () => {
  const p = await api.createProject();
  // Bracketed by the test's own clock (one host, one clock): no fixed bound a slow host trips.
  const before = Date.now();
  await api.store.instances.heartbeat({
    instanceId: `reaper-${randomUUID()}`,
    service: 'sandbox-reaper',
    host: 'h',
    pid: 1,
    startedAt: new Date(),
  });
  const res = await api.request('GET', `/v1/projects/${p.id}/sandboxes/reaper`, { key: p.key });
  const after = Date.now();
  expect(res.status, res.raw).toBe(200);
  expect(res.body.instances).toBeGreaterThanOrEqual(1);
  // This heartbeat or a later one (another test's reaper), read before the answer came back.
  expect(Date.parse(res.body.last_pass_at)).toBeGreaterThanOrEqual(before);
  expect(Date.parse(res.body.last_pass_at)).toBeLessThanOrEqual(after);
  expect(res.body.last_pass_ago_ms).toBeGreaterThanOrEqual(0);
  expect(res.body.last_pass_ago_ms).toBeLessThanOrEqual(after - before + 1);
  expect(res.body).not.toHaveProperty('host');
});

it('filters the execution history by agent', async () => {
  const p = await api.createProject();
  const mine = await execution(p.id, {
    tool: 'web.fetch',
    status: 'succeeded',
    agent: 'scout',
    ms: 5,
    ago: '1 minute',
  });
  await execution(p.id, { tool: 'web.fetch', status: 'succeeded', ms: 5, ago: '1 minute' });
  const res = await api.request('GET', `/v1/projects/${p.id}/executions?agent=scout`, {
    key: p.key,
  });
  expect(res.status, res.raw).toBe(200);
  expect(res.body.executions.map((e: { id: string }) => e.id)).toEqual([mine]);
  expect(res.body.total).toBe(1);
});

it('lists artifacts newest first with their download url; tasks of an empty project are none', async () => {
  const p = await api.createProject();
  const ids = [randomUUID(), randomUUID()];
  for (const [i, id] of ids.entries()) {
    await api.store.pool.query(
      `INSERT INTO resource.artifacts
         (artifact_id, project_id, filename, mime, size_bytes, sha256, storage_uri, created_at)
       VALUES ($1, $2, $3, 'image/png', 10, 'x', 'file:///nowhere', now() - $4::interval)`,
      [id, p.id, `pic-${i}.png`, `${10 - i} seconds`],
    );
  }
  const res = await api.request('GET', `/v1/projects/${p.id}/artifacts`, { key: p.key });
  expect(res.status, res.raw).toBe(200);
  expect(res.body.artifacts.map((a: { filename: string }) => a.filename)).toEqual([
    'pic-1.png',
    'pic-0.png',
  ]);
  expect(res.body.artifacts[0].download_url).toBe(
    `/v1/projects/${p.id}/artifacts/${ids[1]}/content`,
  );
  const tasks = await api.request('GET', `/v1/projects/${p.id}/tasks`, { key: p.key });
  expect(tasks.body).toEqual({ tasks: [] });
  const none = await api.request('GET', `/v1/projects/${p.id}/tasks/${randomUUID()}/timeline`, {
    key: p.key,
  });
  expectError(none, 404, 'not_found');
  const args = await api.request('GET', `/v1/projects/${p.id}/executions/nope/arguments`, {
    key: p.key,
  });
  expectError(args, 404, 'not_found');
});

it("refuses another project's key on every console route", async () => {
  const owner = await api.createProject();
  const other = await api.createProject();
  const call = await execution(owner.id, {
    tool: 'web.fetch',
    status: 'succeeded',
    ms: 5,
    ago: '1 minute',
  });
  for (const path of [
    '/executions/per-minute',
    `/executions?agent=scout`,
    '/artifacts',
    '/tasks',
    `/tasks/${randomUUID()}/timeline`,
    `/executions/${call}/arguments`,
    '/sandboxes/reaper',
    '/events',
  ]) {
    const res = await api.request('GET', `/v1/projects/${owner.id}${path}`, { key: other.key });
    expectError(res, 404, 'not_found');
  }
  const anonymous = await api.request('GET', `/v1/projects/${owner.id}/events`);
  expectError(anonymous, 401, 'unauthorized');
});

/** Reads SSE `data:` lines from the events route until `n` arrived. */
async function readEvents(project: string, key: string, n: number, publish: () => void) {
  const ctl = new AbortController();
  const res = await fetch(`${base}/v1/projects/${project}/events`, {
    headers: { authorization: `Bearer ${key}` },
    signal: ctl.signal,
  });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toContain('text/event-stream');
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: unknown[] = [];
  let buf = '';
  let published = false;
  while (events.length < n) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    if (!published && buf.includes(': connected')) {
      published = true;
      publish();
    }
    for (const line of buf.split('\n')) {
      if (line.startsWith('data: ')) events.push(JSON.parse(line.slice(6)));
    }
    buf = buf.slice(buf.lastIndexOf('\n') + 1);
  }
  ctl.abort();
  return events;
}

it("streams the project's own events over SSE and none of another project's", async () => {
  const a = await api.createProject();
  const b = await api.createProject();
  const root = api.config.nats.subject_root;
  const enc = (v: unknown) => new TextEncoder().encode(JSON.stringify(v));
  // The events as the services and callers would publish them: the admin user may publish all.
  const admin = await api.nats.connect('admin');
  const events = await readEvents(a.id, a.key, 3, () => {
    // b's events first: had they leaked, they would be the first to arrive.
    admin.publish(`${root}.v1.${b.id}.main.evt.tool.web.result`, enc({ tool_call_id: 'b-1' }));
    admin.publish(`${root}.v1.${b.id}.main.cmd.tool.web.fetch`, enc({ tool_call_id: 'b-2' }));
    admin.publish(`${root}.v1.${a.id}.main.cmd.tool.web.fetch`, enc({ tool_call_id: 'a-1' }));
    admin.publish(`${root}.v1.${a.id}.main.evt.tool.web.result`, enc({ tool_call_id: 'a-1' }));
    admin.publish(`${root}.v1.${a.id}.main.str.agent.scout.chunk`, enc({ delta: 'hi' }));
  });
  // Calls come off the command stream, events by subscription: their order may differ.
  expect(events).toHaveLength(3);
  expect(events).toEqual(
    expect.arrayContaining([
      { kind: 'tool.call', channel: 'main', name: 'web', body: { tool_call_id: 'a-1' } },
      { kind: 'tool.result', channel: 'main', name: 'web', body: { tool_call_id: 'a-1' } },
      { kind: 'agent.chunk', channel: 'main', name: 'scout', body: { delta: 'hi' } },
    ]),
  );
});

it('serves the console with a strict Content-Security-Policy and nothing from elsewhere', async () => {
  const redirect = await api.request('GET', '/console');
  expect(redirect.status).toBe(302);
  expect(redirect.headers['location']).toBe('/console/');
  const page = await api.request('GET', '/console/');
  expect(page.status).toBe(200);
  expect(page.headers['content-type']).toContain('text/html');
  const csp = String(page.headers['content-security-policy']);
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("script-src 'self'");
  expect(csp).toContain("connect-src 'self'");
  expect(csp).toContain("frame-ancestors 'none'");
  // Every script and stylesheet the page names is its own, under /console/.
  const refs = [...page.raw.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!);
  expect(refs.length).toBeGreaterThan(0);
  for (const ref of refs) expect(ref).toMatch(/^(\/console\/|data:,$)/);
  const script = refs.find((r) => r.endsWith('.js'))!;
  const js = await api.request('GET', script);
  expect(js.status).toBe(200);
  expect(js.headers['content-security-policy']).toBe(csp);
  expect(js.raw).not.toMatch(/https?:\/\/(?!www\.w3\.org\/2000\/svg)/);
});

it('ends open event streams when the api closes, instead of waiting on them', async () => {
  const own = await startTestApi();
  await own.app.listen({ port: 0, host: '127.0.0.1' });
  const port = (own.app.server.address() as AddressInfo).port;
  const p = await own.createProject();
  const res = await fetch(`http://127.0.0.1:${port}/v1/projects/${p.id}/events`, {
    headers: { authorization: `Bearer ${p.key}` },
  });
  const reader = res.body!.getReader();
  expect(new TextDecoder().decode((await reader.read()).value)).toContain(': connected');
  await own.close();
  let rest = await reader.read();
  while (!rest.done) rest = await reader.read();
  expect(rest.done).toBe(true);
});
