// How the console shows answers, in a real browser (Debian's Chromium through playwright-core):
// an agent's text as Markdown with anything a model could smuggle in (an image's onerror, a
// script, a javascript: link) removed before it reaches the page; an answer given as an object
// as its fields, not as raw JSON running off the page; and every page usable 800 px wide, its
// navigation (Sign out included) on screen.
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from '../support/mesh.ts';
import { startAgentMesh, type AgentMesh } from '../support/agent-mesh.ts';
import { openBrowser, signIn, type ConsoleBrowser } from '../support/browser.ts';

const SHOTS = join(REPO_ROOT, 'test-artifacts', 'console');
let mesh: AgentMesh;
let ui: ConsoleBrowser;
let base: string;

beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startWorker();
  await mesh.api.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(mesh.api.app.server.address() as AddressInfo).port}`;
  await mkdir(SHOTS, { recursive: true });
  ui = await openBrowser();
  await ui.page.setViewportSize({ width: 800, height: 900 });
  await signIn(ui.page, base, mesh.project.key, mesh.project.id);
}, 90_000);
afterAll(async () => {
  await ui?.close();
  await mesh?.close();
});

const shot = (name: string) =>
  ui.page.screenshot({ path: join(SHOTS, `${name}.png`), fullPage: true });

/** Starts a thread with one message and opens it in the console at its first answer. */
async function chat(agent: string, input: string) {
  const { page } = ui;
  const post = async (url: string, body: unknown) => {
    const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}${url}`, {
      key: mesh.project.key,
      body,
    });
    expect(res.status, res.raw).toBeLessThan(300);
    return res.body as { thread_id: string };
  };
  const { thread_id: thread } = await post(`/agents/${agent}/threads`, { title: agent });
  await post(`/agents/${agent}/threads/${thread}/messages`, { input });
  await page.goto(`${base}/console/#/threads/${agent}/${thread}`);
  const answer = page.locator('li.msg.agent[data-seq="1"][data-status=succeeded]');
  await answer.waitFor({ timeout: 60_000 });
  return answer;
}

/** The page is no wider than the window (nothing runs off to the right). */
const fits = () =>
  ui.page.evaluate(() => {
    const g = globalThis as unknown as {
      document: { documentElement: { scrollWidth: number } };
      innerWidth: number;
    };
    return g.document.documentElement.scrollWidth <= g.innerWidth;
  });

it('renders an answer as Markdown and drops the markup a model could inject', async () => {
  const { page } = ui;
  const agent = await mesh.createAgent({
    id: 'writer',
    script: [
      {
        text: [
          '**Bold** and `code`.',
          '',
          '- one',
          '- two',
          '',
          '<img src=x onerror="window.__pwned = 1"><script>window.__pwned = 2</script>',
          '<a href="javascript:window.__pwned = 3">click me</a> <iframe src="/"></iframe>',
        ].join('\n'),
      },
    ],
  });
  const answer = await chat(agent, 'Write something.');
  const md = answer.locator('.markdown');
  expect(await md.locator('strong').textContent()).toBe('Bold');
  expect(await md.locator('code').textContent()).toBe('code');
  expect(await md.locator('li').allTextContents()).toEqual(['one', 'two']);
  // What could run is gone from the DOM, not merely blocked by the CSP.
  expect(await page.locator('main [onerror]').count()).toBe(0);
  expect(await page.locator('main script, main iframe').count()).toBe(0);
  expect(await md.locator('a', { hasText: 'click me' }).getAttribute('href')).toBeNull();
  await md.locator('a', { hasText: 'click me' }).click();
  expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
  expect(await fits()).toBe(true);
  await shot('answer-markdown');

  // The same answer on the task's page is cleaned the same way.
  const { tasks } = (
    await mesh.api.request('GET', `/v1/projects/${mesh.project.id}/tasks?limit=1`, {
      key: mesh.project.key,
    })
  ).body as { tasks: { task_id: string }[] };
  await page.goto(`${base}/console/#/tasks/${tasks[0]!.task_id}`);
  const step = page.locator('section.final .answer .markdown');
  await step.waitFor();
  expect(await step.locator('strong').textContent()).toBe('Bold');
  expect(await page.locator('main [onerror], main script, main iframe').count()).toBe(0);
  expect(await page.evaluate(() => (globalThis as { __pwned?: number }).__pwned)).toBeUndefined();
  // No CSP check here: Chromium reports a violation when DOMPurify's inert parse (DOMParser)
  // meets the onerror attribute, although a parsed document never runs it. What reached the
  // page is checked above.
}, 120_000);

it('shows an answer given as an object as its fields, within the page', async () => {
  const long = 'https://example.com/' + 'a-very-long-path-segment/'.repeat(40);
  const agent = await mesh.createAgent({
    id: 'reporter',
    script: [
      {
        toolCalls: [
          {
            name: 'submit_result',
            arguments: {
              result: { summary: 'All **three** checks passed.', source: long, checks: [1, 2, 3] },
            },
          },
        ],
      },
    ],
  });
  const answer = await chat(agent, 'Report.');
  const fields = answer.locator('.answer dl.fields');
  // Postgres (jsonb) keeps an object's keys in its own order.
  expect((await fields.locator('dt').allTextContents()).sort()).toEqual([
    'checks',
    'source',
    'summary',
  ]);
  expect(await fields.locator('dd .markdown strong').first().textContent()).toBe('three');
  expect(await answer.textContent()).not.toContain('"summary"');
  expect(await fits()).toBe(true);
  await shot('answer-fields');
}, 120_000);

it('is usable 800 px wide: every page fits, and Sign out is on screen', async () => {
  const { page } = ui;
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/executions`, {
    key: mesh.project.key,
    body: { tool: 'builtin.echo', arguments: { wide: 'x'.repeat(400) }, wait: false },
  });
  // No skills service runs here: the call stays queued, which is enough to fill a row.
  expect(res.status, res.raw).toBeLessThan(300);
  const id = (res.body.execution as { id: string }).id;
  for (const name of ['executions', 'tasks', 'threads', 'artifacts', 'tools', 'approvals']) {
    await page.goto(`${base}/console/#/${name}`);
    await page.locator(`main[data-page=${name}] h1`).waitFor();
    expect(await fits(), name).toBe(true);
  }
  await page.goto(`${base}/console/#/executions/${id}`);
  await page.locator(`aside.detail[data-id="${id}"]`).waitFor();
  expect(await fits()).toBe(true);
  await shot('narrow-executions');

  const signOut = page.locator('nav button', { hasText: 'Sign out' });
  const box = (await signOut.boundingBox())!;
  expect(box.x).toBeGreaterThanOrEqual(0);
  expect(box.x + box.width).toBeLessThanOrEqual(800);
  await signOut.click();
  await page.locator('form.signin').waitFor();
  expect(await page.evaluate(() => sessionStorage.getItem('toolmesh.key'))).toBeNull();
}, 90_000);
