// The console's Inputs page, in a real browser (Debian's Chromium through playwright-core),
// against the api and a tools service whose MCP server asks for input during a call made over
// the bus (nobody to ask): the question is listed with a form built from the schema the server
// asked for; Accept with another project's key swapped into the page is refused (not_found) and
// changes nothing; Accept with the form filled in sends the answer, and the call finishes with
// the server's result.
import { join } from 'node:path';
import { mkdir } from 'node:fs/promises';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import type { ToolResult } from '@toolmesh/client';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { REPO_ROOT } from '../support/mesh.ts';
import { openBrowser, signIn, type ConsoleBrowser } from '../support/browser.ts';
import { until } from '../support/procs.ts';
import { startFacadeMesh, type FacadeMesh } from '../mcp-facade/support.ts';

const SHOTS = join(REPO_ROOT, 'test-artifacts', 'console');
let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let tools: ToolsService;
let ui: ConsoleBrowser;
let other: { id: string; key: string };

beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: 'silent' }),
  );
  other = await mesh.api.createProject();
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/mcp-servers`, {
    key: mesh.project.key,
    body: { name: 'everything', transport: 'http', url: fixture.url },
  });
  if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  await mkdir(SHOTS, { recursive: true });
  ui = await openBrowser();
  await signIn(ui.page, mesh.baseUrl, mesh.project.key, mesh.project.id);
}, 120_000);
afterAll(async () => {
  await ui?.close();
  await tools?.stop(1_000);
  await fixture?.stop();
  await mesh?.close();
});

const statusOf = async (id: string) =>
  (
    await mesh.api.request('GET', `/v1/projects/${mesh.project.id}/input-requests/${id}`, {
      key: mesh.project.key,
    })
  ).body.status as string;

it("answers an MCP server's question from the form its schema makes", async () => {
  const { page } = ui;
  const result: Promise<ToolResult> = mesh.client.callTool(
    {
      project: mesh.project.id,
      channel: 'main',
      tool: 'everything.test_elicitation',
      arguments: { message: 'Which colour?' },
    },
    { waitMs: 120_000 },
  );
  const pending = await until(async () => {
    const r = await mesh.api.request('GET', `/v1/projects/${mesh.project.id}/input-requests`, {
      key: mesh.project.key,
    });
    return (r.body.input_requests as { input_request_id: string; message: string }[]).find(
      (x) => x.message === 'Which colour?',
    );
  }, 30_000);
  const id = pending.input_request_id;

  await page.goto(`${mesh.baseUrl}/console/#/inputs`);
  const row = page.locator(`tr[data-input-request="${id}"]`);
  await row.waitFor();
  expect(await row.textContent()).toContain('Which colour?');
  await row.locator('input[name=response]').fill('teal');

  // Another project's key in the page: the api refuses, and the question still waits.
  await page.evaluate((k) => sessionStorage.setItem('toolmesh.key', k), other.key);
  try {
    await row.locator('button[data-action=accept]').click();
    await expect
      .poll(() => row.locator('.action-status[data-state=error]').textContent())
      .toContain('not_found');
  } finally {
    await page.evaluate((k) => sessionStorage.setItem('toolmesh.key', k), mesh.project.key);
  }
  expect(await statusOf(id)).toBe('pending');

  await row.locator('button[data-action=accept]').click();
  await expect.poll(() => statusOf(id), { timeout: 20_000 }).toBe('answered');
  const r = await result;
  expect(r.status).toBe('succeeded');
  const text = (r.content.result as { content: { text: string }[] }).content[0]?.text;
  expect(text).toBe('User response: action=accept, content={"response":"teal"}');
  await expect
    .poll(() => page.locator('section[data-section=input-requests] p.muted').textContent())
    .toContain('no MCP server waits');
  await page.screenshot({ path: join(SHOTS, 'inputs.png'), fullPage: true });
}, 120_000);
