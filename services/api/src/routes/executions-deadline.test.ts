// A tool's registered timeout_ms is the deadline of a call over HTTP that names none; a call's
// own timeout_ms wins.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createSubjects, decodeMessage } from '@toolmesh/protocol';
import { startTestApi, type TestApi } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi();
});
afterAll(async () => {
  await api?.close();
});

it('sends the registered deadline unless the call gives its own', async () => {
  const p = await api.createProject();
  const created = await api.request('POST', `/v1/projects/${p.id}/tools`, {
    key: p.key,
    body: {
      name: 'ext.slow',
      description: 'an external tool',
      parameters: { type: 'object', properties: {} },
      options: { timeout_ms: 1234 },
    },
  });
  expect(created.status).toBe(201);
  const subject = createSubjects(api.config.nats.subject_root).toolCall({
    project: p.id,
    channel: 'api',
    target: 'ext',
    tool: 'slow',
  });
  const seen: (number | undefined)[] = [];
  // Watching as the admin user: the api publishes calls, it may not read them.
  const admin = await api.nats.connect('admin');
  const sub = admin.subscribe(subject, {
    callback: (_e, m) => {
      seen.push(decodeMessage('tool_call', m.data).timeout_ms);
    },
  });
  await admin.flush();
  for (const body of [
    { tool: 'ext.slow', arguments: {}, wait: false },
    { tool: 'ext.slow', arguments: {}, wait: false, timeout_ms: 99 },
  ]) {
    const res = await api.request('POST', `/v1/projects/${p.id}/executions`, { key: p.key, body });
    expect(res.status).toBe(202);
  }
  for (let i = 0; i < 50 && seen.length < 2; i++) await new Promise((r) => setTimeout(r, 20));
  sub.unsubscribe();
  expect(seen).toEqual([1234, 99]);
});
