// Finding an approval past the newest page (GET /approvals with tool_call_id, from/to, status
// any), as the console's approvals page does: 205 calls held for approval an hour apart, the
// oldest ones found by id and by time range. Another project's key finds none of them.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { heldAt as at, holdApprovals } from './support/held-approvals.ts';

let api: TestApi;
let a: { id: string; key: string };
let b: { id: string; key: string };

beforeAll(async () => {
  api = await startTestApi();
  a = await api.createProject();
  b = await api.createProject();
  await holdApprovals(api, a.id, 205);
}, 120_000);
afterAll(async () => {
  await api?.close();
});

const list = async (query: string, key = a.key, project = a.id) => {
  const res = await api.request('GET', `/v1/projects/${project}/approvals?${query}`, { key });
  return {
    status: res.status,
    raw: res.raw,
    ids:
      res.status === 200
        ? (res.body.approvals as { tool_call_id: string }[]).map((x) => x.tool_call_id)
        : [],
  };
};

it('the newest page does not hold the oldest calls, and tool_call_id finds them', async () => {
  const page = await list('limit=200');
  expect(page.ids).toHaveLength(200);
  expect(page.ids[0]).toBe('held-204');
  expect(page.ids).not.toContain('held-0');

  expect((await list('tool_call_id=held-0')).ids).toEqual(['held-0']);
  expect((await list('tool_call_id=held-0&status=any')).ids).toEqual(['held-0']);
  expect((await list('tool_call_id=held-0&status=approved')).ids).toEqual([]);
  expect((await list(`tool_call_id=held-0&from=${at(1)}`)).ids).toEqual([]);
  expect((await list('tool_call_id=never-held')).ids).toEqual([]);
});

it('from and to find the calls held in a time range, newest first', async () => {
  const range = await list(`from=${at(0)}&to=${at(3)}&status=any`);
  expect(range.status, range.raw).toBe(200);
  expect(range.ids).toEqual(['held-2', 'held-1', 'held-0']);
  expect((await list(`from=${at(203)}`)).ids).toEqual(['held-204', 'held-203']);
  expect((await list(`to=${at(1)}`)).ids).toEqual(['held-0']);
});

it('refuses a range backwards, a time that is not one, and an unknown status', async () => {
  for (const q of [`from=${at(3)}&to=${at(0)}`, 'from=yesterday', 'status=open', 'to=2026-01-05']) {
    const res = await list(q);
    expect(res.status, `${q}: ${res.raw}`).toBe(400);
  }
});

it("another project's key finds none of them", async () => {
  expect((await list('tool_call_id=held-0', b.key)).status).toBe(404);
  expect((await list(`from=${at(0)}&to=${at(3)}`, b.key)).status).toBe(404);
  const theirs = await list('tool_call_id=held-0&status=any', b.key, b.id);
  expect(theirs.status, theirs.raw).toBe(200);
  expect(theirs.ids).toEqual([]);
  expect((await list(`from=${at(0)}&status=any`, b.key, b.id)).ids).toEqual([]);
});
