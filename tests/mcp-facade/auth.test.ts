// Who reaches a project's facade: its own keys (and the admin key); no key is 401, another
// project's key is 404 as for anything of another project, and a session id opened for one
// project is unknown under another, whichever key carries it. A key revoked on another api
// instance is refused at once, though this instance verified it a moment before.
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '@toolmesh/testing';
import { spawnReady } from '../support/procs.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';
import { ADMIN_KEY } from '../../services/api/src/test/support.ts';

let mesh: FacadeMesh;
let other: { id: string; key: string };
beforeAll(async () => {
  // Verified keys are kept far longer than this file runs: only the revocation can drop one.
  mesh = await startFacadeMesh({ CG__API__AUTH_CACHE_TTL_MS: '600000' }, { skills: false });
  other = await mesh.api.createProject();
});
afterAll(async () => mesh?.close());

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'raw', version: '1' },
  },
};

async function post(url: URL, key: string | undefined, body: unknown, session?: string) {
  const res = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(key ? { authorization: `Bearer ${key}` } : {}),
      ...(session ? { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } : {}),
    },
    body: JSON.stringify(body),
  });
  return { status: res.status, session: res.headers.get('mcp-session-id'), text: await res.text() };
}

describe('facade auth', () => {
  it('refuses a request without a key, or with an unknown one', async () => {
    expect((await post(mesh.mcpUrl(mesh.project.id), undefined, initialize)).status).toBe(401);
    expect((await post(mesh.mcpUrl(mesh.project.id), 'tmk_nope', initialize)).status).toBe(401);
  });

  it("answers another project's key with 404, with the SDK client too", async () => {
    expect((await post(mesh.mcpUrl(mesh.project.id), other.key, initialize)).status).toBe(404);
    await expect(mesh.connect({ key: other.key })).rejects.toThrow(/not_found/);
  });

  it('serves the admin key and the project key', async () => {
    const admin = await mesh.connect({ key: ADMIN_KEY });
    expect((await admin.listTools()).tools.length).toBeGreaterThan(0);
    const own = await post(mesh.mcpUrl(mesh.project.id), mesh.project.key, initialize);
    expect(own.status).toBe(200);
    expect(own.session).toEqual(expect.any(String));
  });

  it("keeps a session to its project: another project's key and path do not find it", async () => {
    const own = await post(mesh.mcpUrl(mesh.project.id), mesh.project.key, initialize);
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    const res = await post(mesh.mcpUrl(other.id), other.key, list, own.session!);
    expect(res.status).toBe(404);
    expect(res.text).toContain('Session not found');
    // And the session's own path with the other key is refused before the session is looked at.
    expect((await post(mesh.mcpUrl(mesh.project.id), other.key, list, own.session!)).status).toBe(
      404,
    );
  });

  it('refuses a key revoked on another api instance at once, though this one just verified it', async () => {
    const created = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/keys`, {
      key: mesh.project.key,
      body: { name: 'to-revoke' },
    });
    expect(created.status, created.raw).toBe(201);
    const key = created.body.key as string;
    const own = await post(mesh.mcpUrl(mesh.project.id), key, initialize);
    expect(own.status).toBe(200);
    const list = { jsonrpc: '2.0', id: 2, method: 'tools/list', params: {} };
    expect((await post(mesh.mcpUrl(mesh.project.id), key, list, own.session!)).status).toBe(200);

    const port = await freePort();
    const second = await spawnReady(
      join(import.meta.dirname, '..', '..', 'services/api/src/main.ts'),
      { ...mesh.api.env, CG__API__PORT: String(port), CG__LOG__LEVEL: 'info' },
      'api listening',
      'api',
    );
    try {
      const revoked = await fetch(
        `http://127.0.0.1:${port}/v1/projects/${mesh.project.id}/keys/${created.body.key_id}`,
        { method: 'DELETE', headers: { authorization: `Bearer ${mesh.project.key}` } },
      );
      expect(revoked.status).toBe(204);
    } finally {
      const exited = once(second, 'exit');
      second.kill('SIGTERM');
      await exited;
    }
    const after = await post(mesh.mcpUrl(mesh.project.id), key, list, own.session!);
    expect(after.status).toBe(401);
    expect(after.text).toContain('unknown or revoked API key');
  });

  it('refuses an agent that does not exist', async () => {
    const res = await post(
      mesh.mcpUrl(mesh.project.id, 'agent=ghost'),
      mesh.project.key,
      initialize,
    );
    expect(res.status).toBe(404);
  });
});
