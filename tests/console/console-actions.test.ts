// The console acts, in a real browser (Debian's Chromium through playwright-core), against the
// api, a skills service, a tools service with an MCP server and an agent worker: cancel an
// execution and a task, approve a held call, re-run an execution, refresh, disable and enable an
// MCP server, try a tool from the form its schema makes; find by id, filter by time, the error
// column. Each action is first tried with another project's key swapped into the page, and the
// api refuses it (the console says not_found) while nothing changes.
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { startMcpHttpServer, type McpHttpFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { REPO_ROOT } from '../support/mesh.ts';
import { startAgentMesh, type AgentMesh } from '../support/agent-mesh.ts';
import { openBrowser, signIn, type ConsoleBrowser } from '../support/browser.ts';
import { until } from '../support/procs.ts';

const SHOTS = join(REPO_ROOT, 'test-artifacts', 'console');
let mesh: AgentMesh;
let tools: ToolsService;
let mcp: McpHttpFixture;
let ui: ConsoleBrowser;
let base: string;
let other: { id: string; key: string };

beforeAll(async () => {
  mesh = await startAgentMesh({
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  await mesh.startSkills();
  await mesh.startWorker();
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: 'silent' }),
  );
  mcp = await startMcpHttpServer({ tools: ['echo', 'stats'], announce: false });
  other = await mesh.api.createProject();
  await mesh.api.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(mesh.api.app.server.address() as AddressInfo).port}`;
  await mkdir(SHOTS, { recursive: true });
  ui = await openBrowser();
  await signIn(ui.page, base, mesh.project.key, mesh.project.id);
}, 90_000);
afterAll(async () => {
  await ui?.close();
  await tools?.stop(1_000);
  await mcp?.stop();
  await mesh?.close();
});

const api = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', url: string, body?: unknown) =>
  mesh.api.request(method, `/v1/projects/${mesh.project.id}${url}`, {
    key: mesh.project.key,
    body,
  });
const taskStatus = async (id: string) => (await api('GET', `/tasks/${id}`)).body.status as string;
const statusOf = async (id: string) =>
  (await api('GET', `/executions/${id}`)).body.execution.status as string;
const shot = (name: string) =>
  ui.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Runs `fn` with the other project's key in the page's session, then puts ours back. */
async function asOther(fn: () => Promise<void>): Promise<void> {
  const { page } = ui;
  await page.evaluate((k) => sessionStorage.setItem('toolmesh.key', k), other.key);
  try {
    await fn();
  } finally {
    await page.evaluate((k) => sessionStorage.setItem('toolmesh.key', k), mesh.project.key);
  }
}

/** Clicks the action and waits for the console to say the api refused it. */
async function refused(button: string, status = '.action-status'): Promise<void> {
  const { page } = ui;
  await asOther(async () => {
    await page.click(button);
    await expect
      .poll(() => page.locator(`${status}[data-state=error]`).first().textContent())
      .toContain('not_found');
  });
}

/** Opens an execution by its link (`#/executions/<id>`), on a fresh executions page. */
async function find(id: string): Promise<void> {
  const { page } = ui;
  await page.goto(`${base}/console/#/executions/${id}`);
  await page.locator(`aside.detail[data-id="${id}"]`).waitFor();
}

it('cancels a running execution; the row shows its error code', async () => {
  const { page } = ui;
  const res = await api('POST', '/executions', {
    tool: 'builtin.sleep',
    arguments: { ms: 60_000 },
    wait: false,
  });
  expect(res.status, res.raw).toBe(202);
  const id = res.body.execution.id as string;
  await until(async () => ((await statusOf(id)) === 'running' ? true : undefined), 20_000);

  await find(id);
  const cancel = 'aside.detail button[data-action=cancel]';
  await refused(cancel);
  expect(await statusOf(id)).toBe('running');

  await page.click(cancel);
  await expect.poll(() => statusOf(id), { timeout: 20_000 }).toBe('canceled');
  const row = page.locator(`table.executions tr[data-id="${id}"]`);
  await expect.poll(() => row.getAttribute('data-status'), { timeout: 20_000 }).toBe('canceled');
  expect(await row.locator('td.error-code').textContent()).toBe('canceled');
  await expect
    .poll(() => page.locator('aside.detail .badge').first().textContent())
    .toBe('canceled');
  await shot('action-cancel');
}, 90_000);

it("shows an HTTP call's arguments and re-runs it with them", async () => {
  const { page } = ui;
  const res = await api('POST', '/executions', {
    tool: 'builtin.echo',
    arguments: { text: 'run me twice' },
  });
  expect(res.status, res.raw).toBe(200);
  const id = res.body.execution.id as string;

  await find(id);
  const detail = page.locator('aside.detail');
  expect(await detail.textContent()).not.toContain('not recorded');
  expect(JSON.parse((await detail.locator('pre.json').first().textContent())!)).toEqual({
    text: 'run me twice',
  });
  await refused('aside.detail button[data-action=rerun]');
  const before = (await api('GET', '/executions?tool=builtin.echo&limit=1')).body.total as number;
  expect(before).toBe(1);

  await page.click('aside.detail button[data-action=rerun]');
  const again = page.locator('aside.detail:not([data-id="' + id + '"])');
  await again.waitFor();
  const newId = (await again.getAttribute('data-id'))!;
  expect(await again.locator('.action-status').textContent()).toBe(`re-run of ${id}`);
  await expect.poll(() => statusOf(newId), { timeout: 20_000 }).toBe('succeeded');
  const done = (await api('GET', `/executions/${newId}`)).body;
  expect(done.execution.arguments).toEqual({ text: 'run me twice' });
  expect(done.card.content.result).toEqual({ text: 'run me twice' });
  expect((await api('GET', '/executions?tool=builtin.echo&limit=1')).body.total).toBe(2);
  await expect.poll(() => page.locator(`table.executions tr[data-id="${newId}"]`).count()).toBe(1);
}, 60_000);

it('finds by id, filters by time range, and finds nothing of another project', async () => {
  const { page } = ui;
  await page.goto(`${base}/console/#/sandboxes`);
  await page.goto(`${base}/console/#/executions`);
  const rows = page.locator('table.executions tbody tr');
  await expect.poll(() => rows.count()).toBeGreaterThanOrEqual(3);
  const all = await rows.count();
  const first = (await rows.first().getAttribute('data-id'))!;
  await page.fill('input[name=find]', first);
  await page.press('input[name=find]', 'Enter');
  await page.locator(`aside.detail[data-id="${first}"]`).waitFor();

  // datetime-local takes the browser's local time; these are an hour ahead and an hour back.
  const local = (offsetMs: number) =>
    page.evaluate((o) => {
      const d = new Date(Date.now() + o);
      d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
      return d.toISOString().slice(0, 19);
    }, offsetMs);
  await page.fill('input[name=from]', await local(3_600_000));
  await page.dispatchEvent('input[name=from]', 'change');
  await expect.poll(() => rows.count()).toBe(0);
  expect(await page.locator('.total').textContent()).toBe('0 executions');
  await page.fill('input[name=from]', await local(-3_600_000));
  await page.dispatchEvent('input[name=from]', 'change');
  await expect.poll(() => rows.count()).toBe(all);
  await page.fill('input[name=to]', await local(-1_800_000));
  await page.dispatchEvent('input[name=to]', 'change');
  await expect.poll(() => rows.count()).toBe(0);

  // Another project's execution is not found from this one.
  const theirs = await mesh.api.request('POST', `/v1/projects/${other.id}/executions`, {
    key: other.key,
    body: { tool: 'builtin.echo', arguments: { mine: 'only' } },
  });
  expect(theirs.status, theirs.raw).toBe(200);
  const theirId = theirs.body.execution.id as string;
  await page.fill('input[name=find]', theirId);
  await page.press('input[name=find]', 'Enter');
  await expect
    .poll(() => page.locator('.find-error').textContent())
    .toBe(`no execution ${theirId} in this project`);
  expect(await page.locator('aside.detail').isHidden()).toBe(true);
}, 60_000);

it('approves and denies calls held for approval from their execution', async () => {
  const { page } = ui;
  expect((await api('PUT', '/targets/builtin/approval', { approval: 'required' })).status).toBe(
    200,
  );
  try {
    const res = await api('POST', '/executions', {
      tool: 'builtin.echo',
      arguments: { held: true },
      wait: false,
    });
    expect(res.status, res.raw).toBe(202);
    const id = res.body.execution.id as string;
    await expect.poll(() => statusOf(id), { timeout: 20_000 }).toBe('awaiting_approval');

    await find(id);
    await refused('aside.detail button[data-action=approve]');
    expect(await statusOf(id)).toBe('awaiting_approval');
    await page.click('aside.detail button[data-action=approve]');
    await expect.poll(() => statusOf(id), { timeout: 20_000 }).toBe('succeeded');
    await expect
      .poll(() => page.locator(`table.executions tr[data-id="${id}"]`).getAttribute('data-status'))
      .toBe('succeeded');

    // Denied with a reason, which the call's card keeps.
    const next = await api('POST', '/executions', {
      tool: 'builtin.echo',
      arguments: { held: 'again' },
      wait: false,
    });
    const nextId = next.body.execution.id as string;
    await expect.poll(() => statusOf(nextId), { timeout: 20_000 }).toBe('awaiting_approval');
    await find(nextId);
    await page.click('aside.detail button[data-action=deny]');
    await expect
      .poll(() => page.locator('aside.detail .action-status').textContent())
      .toBe('give a reason to deny');
    await page.fill('aside.detail input[name=reason]', 'not today');
    await refused('aside.detail button[data-action=deny]');
    expect(await statusOf(nextId)).toBe('awaiting_approval');
    await page.click('aside.detail button[data-action=deny]');
    await expect.poll(() => statusOf(nextId), { timeout: 20_000 }).toBe('failed');
    const card = (await api('GET', `/executions/${nextId}`)).body.card.content;
    expect(card.error).toMatchObject({ code: 'approval_denied', details: { reason: 'not today' } });
    await expect
      .poll(() =>
        page.locator(`table.executions tr[data-id="${nextId}"] td.error-code`).textContent(),
      )
      .toBe('approval_denied');
  } finally {
    await api('DELETE', '/targets/builtin/approval');
  }
}, 60_000);

it('cancels a running task from its timeline', async () => {
  const { page } = ui;
  const agent = await mesh.createAgent({
    id: 'sleeper',
    allowedTools: ['builtin.sleep'],
    script: [{ toolCalls: [{ name: 'builtin__sleep', arguments: { ms: 60_000 } }] }],
  });
  const taskId = await mesh.startTask(agent, 'sleep for a minute');
  // Found by its id; another project's task is not.
  await page.goto(`${base}/console/#/tasks`);
  const theirs = await mesh.api.request('POST', `/v1/projects/${other.id}/agents`, {
    key: other.key,
    body: { id: 'theirs' },
  });
  expect(theirs.status, theirs.raw).toBe(201);
  const theirTask = await mesh.api.request('POST', `/v1/projects/${other.id}/agents/theirs/tasks`, {
    key: other.key,
    body: { input: 'not yours' },
  });
  expect(theirTask.status, theirTask.raw).toBeLessThan(300);
  const theirId = theirTask.body.task_id as string;
  await page.fill('input[name=find]', theirId);
  await page.press('input[name=find]', 'Enter');
  await expect
    .poll(() => page.locator('.find-error').textContent())
    .toBe(`no task ${theirId} in this project`);
  await page.fill('input[name=find]', taskId);
  await page.press('input[name=find]', 'Enter');
  await expect.poll(() => new URL(page.url()).hash).toBe(`#/tasks/${taskId}`);
  const call = page.locator('ol.timeline li[data-kind=call]', { hasText: 'builtin.sleep' });
  await call.waitFor({ timeout: 30_000 });

  await refused('button[data-action=cancel-task]');
  expect(await taskStatus(taskId)).toBe('running');
  await page.click('button[data-action=cancel-task]');
  await expect.poll(() => taskStatus(taskId)).toBe('canceled');
  await expect
    .poll(() => page.locator('main[data-page=tasks] .toolbar .badge').textContent())
    .toBe('canceled');
  expect(await page.locator('button[data-action=cancel-task]').count()).toBe(0);
  await shot('action-cancel-task');
}, 90_000);

it('refreshes, disables and enables an MCP server', async () => {
  const { page } = ui;
  const made = await api('POST', '/mcp-servers', { name: 'web', transport: 'http', url: mcp.url });
  expect(made.status, made.raw).toBe(201);
  expect(made.body).toMatchObject({ state: 'connected', tool_count: 2 });
  await page.goto(`${base}/console/#/tools`);
  const row = page.locator('tr[data-server=web]');
  await row.waitFor();

  // A tool the server lists from now on comes in with a refresh.
  mcp.setTools(['echo', 'stats', 'fail']);
  await refused('tr[data-server=web] button[data-action=refresh]');
  await page.click('tr[data-server=web] button[data-action=refresh]');
  await expect
    .poll(() => page.locator('.action-status[data-state=ok]').textContent())
    .toContain('web refreshed: 3 tools (1 added, 0 gone)');
  expect((await api('GET', '/tools/web.fail')).status).toBe(200);

  await refused('tr[data-server=web] button[data-action=disable]');
  expect((await api('GET', '/mcp-servers/web')).body.enabled).toBe(true);
  await page.click('tr[data-server=web] button[data-action=disable]');
  await expect.poll(() => row.getAttribute('data-enabled')).toBe('false');
  expect((await api('GET', '/mcp-servers/web')).body.enabled).toBe(false);
  expect((await api('GET', '/tools/web.echo')).body.enabled).toBe(false);

  await refused('tr[data-server=web] button[data-action=enable]');
  expect((await api('GET', '/mcp-servers/web')).body.enabled).toBe(false);
  await page.click('tr[data-server=web] button[data-action=enable]');
  await expect.poll(() => row.getAttribute('data-enabled')).toBe('true');
  expect((await api('GET', '/tools/web.echo')).body.enabled).toBe(true);
  await shot('action-mcp');
}, 60_000);

it('tries a tool from a form built from its schema', async () => {
  const { page } = ui;
  await page.goto(`${base}/console/#/tools`);
  const row = page.locator('tr[data-tool="web.echo"]');
  await row.locator('button[data-action=try]').click();
  const form = page.locator('tr[data-try="web.echo"] form.try');
  // The schema's one property, a required string, is a text field.
  const text = form.locator('input[name=text]');
  expect(await text.getAttribute('type')).toBe('text');
  expect(await text.getAttribute('required')).not.toBeNull();
  await form.locator('button[data-action=run]').click();
  await expect.poll(() => form.locator('.action-status').textContent()).toBe('text is required');

  await text.fill('typed in the console');
  await asOther(async () => {
    await form.locator('button[data-action=run]').click();
    await expect
      .poll(() => form.locator('.action-status[data-state=error]').textContent())
      .toContain('not_found');
  });
  expect((await api('GET', '/executions?tool=web.echo&limit=1')).body.total).toBe(0);
  await form.locator('button[data-action=run]').click();
  await expect
    .poll(() => form.locator('.action-status').textContent(), { timeout: 30_000 })
    .toBe('ran web.echo: succeeded');
  expect(await form.locator('pre.card').textContent()).toContain('typed in the console');
  expect((await api('GET', '/executions?tool=web.echo&limit=1')).body.total).toBe(1);

  // An integer property is a number field, and the number reaches the tool as a number.
  const sleep = page.locator('tr[data-tool="builtin.sleep"]');
  await sleep.locator('button[data-action=try]').click();
  const ms = page.locator('tr[data-try="builtin.sleep"] form.try input[name=ms]');
  expect(await ms.getAttribute('type')).toBe('number');
  await ms.fill('5');
  await ms.press('Enter');
  await expect
    .poll(() => page.locator('tr[data-try="builtin.sleep"] .action-status').textContent(), {
      timeout: 30_000,
    })
    .toBe('ran builtin.sleep: succeeded');
  const last = (await api('GET', '/executions?tool=builtin.sleep&status=succeeded&limit=1')).body
    .executions[0];
  expect(last.arguments).toEqual({ ms: 5 });
  await shot('action-try');
  expect(ui.cspErrors).toEqual([]);
}, 60_000);
