// Project secrets over HTTP: write-only, sealed at rest (a fresh iv per write, bound to its
// project and name), bounded in size, refused without a configured key, and out of reach of
// another project's key.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createSecretBox } from '@toolmesh/store';
import { startTestApi, type TestApi, expectError } from '../test/support.ts';
import { MAX_SECRET_BYTES } from './secrets.ts';

const KEY = randomBytes(32).toString('base64');
let api: TestApi;
beforeAll(async () => {
  api = await startTestApi({ CG__SECRETS__KEY: KEY });
});
afterAll(async () => {
  await api?.close();
});

describe('secrets', () => {
  it('are stored sealed, never answered, and open only under their own project and name', async () => {
    const p = await api.createProject();
    const value = `value-${randomBytes(8).toString('hex')}`;
    const url = `/v1/projects/${p.id}/secrets/token`;
    const put = await api.request('PUT', url, { key: p.key, body: { value } });
    expect(put.status).toBe(201);
    expect(Object.keys(put.body).sort()).toEqual(['created_at', 'name', 'updated_at']);
    expect(put.raw).not.toContain(value);
    const first = await api.store.secrets.get(p.id, 'token');
    expect(first!.ciphertext.toString('utf8')).not.toContain(value);
    await api.request('PUT', url, { key: p.key, body: { value } });
    const second = await api.store.secrets.get(p.id, 'token');
    expect(second!.iv.equals(first!.iv)).toBe(false); // a fresh iv per write
    const box = createSecretBox(KEY);
    expect(box.open(p.id, 'token', second!)).toBe(value);
    // Copied to another project or name, the ciphertext does not open.
    expect(() => box.open('other', 'token', second!)).toThrow(/does not open/);
    expect(() => box.open(p.id, 'renamed', second!)).toThrow(/does not open/);
    expect(() =>
      createSecretBox(randomBytes(32).toString('base64')).open(p.id, 'token', second!),
    ).toThrow(/does not open/);
  });

  it('refuses bad names, empty and oversize values, and unknown fields', async () => {
    const p = await api.createProject();
    const put = (name: string, body: unknown) =>
      api.request('PUT', `/v1/projects/${p.id}/secrets/${name}`, { key: p.key, body });
    expectError(await put('has.dot', { value: 'x' }), 400, 'invalid_id');
    expectError(await put('ok', { value: '' }), 400, 'invalid_request');
    expectError(
      await put('ok', { value: 'x'.repeat(MAX_SECRET_BYTES + 1) }),
      400,
      'invalid_request',
    );
    expectError(await put('ok', { value: 'x', extra: 1 }), 400, 'invalid_request');
    expect((await put('ok', { value: 'x' })).status).toBe(201);
  });

  it("another project's key reaches none of them", async () => {
    const a = await api.createProject();
    const b = await api.createProject();
    await api.request('PUT', `/v1/projects/${a.id}/secrets/token`, {
      key: a.key,
      body: { value: 'a-value' },
    });
    expectError(
      await api.request('GET', `/v1/projects/${a.id}/secrets`, { key: b.key }),
      404,
      'not_found',
    );
    expectError(
      await api.request('PUT', `/v1/projects/${a.id}/secrets/token`, {
        key: b.key,
        body: { value: 'b' },
      }),
      404,
      'not_found',
    );
    expectError(
      await api.request('DELETE', `/v1/projects/${a.id}/secrets/token`, { key: b.key }),
      404,
      'not_found',
    );
    expect((await api.request('GET', `/v1/projects/${b.id}/secrets`, { key: b.key })).body).toEqual(
      {
        secrets: [],
      },
    );
    expectError(await api.request('GET', `/v1/projects/${a.id}/secrets`), 401, 'unauthorized');
  });
});
