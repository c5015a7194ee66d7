// The approvals page finds what its newest page does not show, in a real browser: 205 calls held
// for approval, the oldest found by its call id, by its approval id and by a time range, decided
// from there; another project's approval id finds nothing.
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../../services/api/src/test/support.ts';
import { openBrowser, signIn, type ConsoleBrowser } from '../support/browser.ts';
import { heldAt, holdApprovals } from '../support/held-approvals.ts';

let api: TestApi;
let ui: ConsoleBrowser;
let base: string;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  api = await startTestApi();
  a = await api.createProject();
  b = await api.createProject();
  await holdApprovals(api, a.id, 205);
  await holdApprovals(api, b.id, 1);
  await api.app.listen({ port: 0, host: '127.0.0.1' });
  base = `http://127.0.0.1:${(api.app.server.address() as AddressInfo).port}`;
  ui = await openBrowser();
  await signIn(ui.page, base, a.key, a.id);
}, 180_000);
afterAll(async () => {
  await ui?.close();
  await api?.close();
});

const rows = () => ui.page.locator('section[data-section=calls] tr[data-approval]');
const callIds = async (): Promise<string[]> =>
  rows().evaluateAll((trs) =>
    trs.map((tr) => String(tr.querySelectorAll('td')[1]?.textContent ?? '')),
  );

/** An instant as the browser's datetime-local input takes it (its own time zone). */
const local = (iso: string) =>
  ui.page.evaluate((at) => {
    const d = new Date(at);
    d.setMinutes(d.getMinutes() - d.getTimezoneOffset());
    return d.toISOString().slice(0, 19);
  }, iso);

async function set(name: string, value: string): Promise<void> {
  await ui.page.fill(`[name=${name}]`, value);
  await ui.page.dispatchEvent(`[name=${name}]`, 'change');
}

it('finds the oldest call by its id and by a time range, past the newest 200', async () => {
  const { page } = ui;
  await page.goto(`${base}/console/#/approvals`);
  await expect.poll(() => rows().count(), { timeout: 30_000 }).toBe(200);
  expect(await callIds()).not.toContain('held-0');

  await set('find', 'held-0');
  await expect.poll(callIds).toEqual(['held-0']);
  const approvalId = (await rows().first().getAttribute('data-approval'))!;

  await set('find', '');
  await expect.poll(() => rows().count()).toBe(200);
  await set('from', await local(heldAt(0)));
  await set('to', await local(heldAt(3)));
  await expect.poll(callIds).toEqual(['held-2', 'held-1', 'held-0']);
  await set('from', '');
  await set('to', '');

  // By the approval's own id, then approved from there: it shows its new state.
  await set('find', approvalId);
  await expect.poll(callIds).toEqual(['held-0']);
  await rows().first().locator('button[data-action=approve]').click();
  await expect.poll(() => rows().first().locator('td.state').textContent()).toBe('approved');
  expect((await api.store.approvals.get(a.id, approvalId))?.status).toBe('approved');

  // A range backwards is refused, and the page says so.
  await set('find', '');
  await set('from', await local(heldAt(3)));
  await set('to', await local(heldAt(0)));
  await expect.poll(() => page.locator('p.error').textContent()).toContain('invalid_request');
  expect(ui.cspErrors).toEqual([]);
}, 180_000);

it("another project's approval is not found from this one", async () => {
  const { page } = ui;
  const theirs = (await api.store.approvals.forCall(b.id, 'held-0'))!;
  await page.goto(`${base}/console/#/executions`);
  await page.goto(`${base}/console/#/approvals`);
  await set('find', theirs.approval_id);
  await expect
    .poll(() => page.locator('section[data-section=calls]').textContent())
    .toContain('no approval matches');
  expect(await rows().count()).toBe(0);
}, 60_000);
