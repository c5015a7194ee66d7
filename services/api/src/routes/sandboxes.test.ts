// Listing sandboxes: a project sees its own, newest use first, filtered by state, with expiry
// and lock; another project's key sees nothing of them.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError, startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

async function claim(projectId: string, session: string) {
  const sandboxId = `sbx-${randomUUID()}`;
  const row = await api.store.sandboxes.claim({
    sandboxId,
    provider: 'local',
    projectId,
    agentId: 'agent-1',
    sessionKey: session,
    owner: 'call-1',
    lockMs: 60_000,
    idleTtlSec: 600,
    hardTtlSec: 3_600,
  });
  if (!row) throw new Error('claim lost');
  return sandboxId;
}

it("lists the project's sandboxes, most recently used first, filtered by state", async () => {
  const p = await api.createProject();
  const first = await claim(p.id, 'session-a');
  const second = await claim(p.id, 'session-b');
  await api.store.pool.query(
    `UPDATE state.sandboxes SET last_used_at = now() - interval '1 minute',
       idle_expires_at = now() + interval '10 minutes', lock_owner = 'call-7'
     WHERE sandbox_id = $1`,
    [first],
  );
  await api.store.sandboxes.markDestroyed(second);

  const all = await api.request('GET', `/v1/projects/${p.id}/sandboxes`, { key: p.key });
  expect(all.status, all.raw).toBe(200);
  expect(all.body.sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id)).toEqual([
    second,
    first,
  ]);
  expect(all.body.sandboxes[1]).toMatchObject({
    provider: 'local',
    agent_id: 'agent-1',
    session_key: 'session-a',
    state: 'active',
    lock_owner: 'call-7',
    idle_expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
    hard_expires_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
  });

  const active = await api.request('GET', `/v1/projects/${p.id}/sandboxes?state=active`, {
    key: p.key,
  });
  expect(active.body.sandboxes.map((s: { sandbox_id: string }) => s.sandbox_id)).toEqual([first]);
  const bad = await api.request('GET', `/v1/projects/${p.id}/sandboxes?state=sleeping`, {
    key: p.key,
  });
  expectError(bad, 400, 'invalid_request');
});

it("shows nothing of another project's sandboxes", async () => {
  const owner = await api.createProject();
  const other = await api.createProject();
  await claim(owner.id, 'private');
  const res = await api.request('GET', `/v1/projects/${owner.id}/sandboxes`, { key: other.key });
  expectError(res, 404, 'not_found');
  const own = await api.request('GET', `/v1/projects/${other.id}/sandboxes`, { key: other.key });
  expect(own.body.sandboxes).toEqual([]);
});
