// Bus credentials from an api that was not given the account's keys (`nats.auth_keys` empty, as
// for a NATS whose authentication is not the stack's own): there is nothing to issue, and every
// route says so with a 503 that names the setting, after the usual checks (a key, the project's
// own key). The issuing path is tests/redteam/bus.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';

let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ CG__NATS__AUTH_KEYS: '' });
});
afterAll(async () => {
  await api?.close();
});

describe('bus credentials without the account keys', () => {
  it('answer 503 bus_auth_unconfigured for issue and revoke, and list none', async () => {
    const p = await api.createProject();
    const url = `/v1/projects/${p.id}/bus-credentials`;
    const post = await api.request('POST', url, { key: p.key, body: { name: 'x' } });
    expectError(post, 503, 'bus_auth_unconfigured');
    expect(post.body.error.message).toContain('auth_keys');
    const del = await api.request('DELETE', `${url}/7b0c3b8e-6a4f-4a8e-9d43-2f3c1a0e9b11`, {
      key: p.key,
    });
    expectError(del, 503, 'bus_auth_unconfigured');
    const list = await api.request('GET', url, { key: p.key });
    expect(list.status, list.raw).toBe(200);
    expect(list.body).toEqual({ credentials: [] });
    expectError(await api.request('GET', url), 401, 'unauthorized');
    const other = await api.createProject();
    expectError(
      await api.request('POST', url, { key: other.key, body: { name: 'x' } }),
      404,
      'not_found',
    );
  });
});
