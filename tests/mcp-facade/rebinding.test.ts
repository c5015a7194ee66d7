// DNS rebinding: a web page whose name resolves to the api's address must not reach the facade.
// A request whose Host is not one of the api's names, or whose Origin is another site's, is
// refused with 403 and a JSON-RPC error saying which, on both revisions and every method, before
// the key is even looked at; the api's own names, and the names and origins of [api]
// allowed_hosts / allowed_origins, are served.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type RawRequest } from './raw-http.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let port: string;
beforeAll(async () => {
  mesh = await startFacadeMesh(
    {
      CG__API__ALLOWED_HOSTS: '["mesh.example.test"]',
      CG__API__ALLOWED_ORIGINS: '["https://console.example.test"]',
    },
    { skills: false },
  );
  port = new URL(mesh.baseUrl).port;
});
afterAll(async () => mesh?.close());

const ACCEPT = 'application/json, text/event-stream';
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {},
};

/** The same request on each revision: a 2025 initialize, a 2026-07-28 tools/list. */
const revisions: Record<string, (headers: Record<string, string>) => RawRequest> = {
  '2025-11-25': (headers) => ({
    headers: { accept: ACCEPT, ...headers },
    body: {
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    },
  }),
  '2026-07-28': (headers) => ({
    headers: {
      accept: ACCEPT,
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list',
      ...headers,
    },
    body: { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: META } },
  }),
};

async function send(revision: string, headers: Record<string, string>, key = mesh.project.key) {
  const r = revisions[revision]!({ authorization: `Bearer ${key}`, ...headers });
  const res = await rawRequest(mesh.mcpUrl(mesh.project.id), r);
  return { status: res.status, headers: res.headers, text: await res.text() };
}

describe.each(Object.keys(revisions))('the facade (%s) against DNS rebinding', (revision) => {
  it('refuses a Host that is not one of its names, before asking for a key', async () => {
    for (const host of [`evil.example:${port}`, `localhost:1`, 'mesh.example.test.evil.example']) {
      for (const key of [mesh.project.key, '']) {
        const res = await send(revision, { host }, key);
        expect(res.status, `${host} ${key ? 'with' : 'without'} a key`).toBe(403);
        expect(JSON.parse(res.text)).toEqual({
          jsonrpc: '2.0',
          error: {
            code: -32000,
            message: expect.stringContaining(host),
            data: { code: 'host_not_allowed' },
          },
          id: null,
        });
      }
    }
  });

  it("refuses another site's Origin, a localhost page on another port included", async () => {
    for (const origin of ['http://evil.example', `http://localhost:${Number(port) + 1}`, 'null']) {
      const res = await send(revision, { host: `localhost:${port}`, origin });
      expect(res.status, origin).toBe(403);
      expect(JSON.parse(res.text)).toMatchObject({
        error: { code: -32000, data: { code: 'origin_not_allowed' } },
        id: null,
      });
    }
  });

  it('serves its own names and origins, and the configured ones', async () => {
    const served: Record<string, string>[] = [
      { host: `localhost:${port}` },
      { host: `127.0.0.1:${port}`, origin: `http://localhost:${port}` },
      { host: `[::1]:${port}` },
      // Behind a proxy: the public name, and the api's own pages under it (same origin).
      { host: 'mesh.example.test', origin: 'https://mesh.example.test' },
      { host: `127.0.0.1:${port}`, origin: 'https://console.example.test' },
    ];
    for (const headers of served) {
      const res = await send(revision, headers);
      expect(res.status, JSON.stringify(headers)).toBe(200);
      expect(res.text).toContain(revision === '2025-11-25' ? '"serverInfo"' : '"builtin__echo"');
    }
  });
});

describe('a 2025 session against DNS rebinding', () => {
  it('refuses GET and DELETE from a foreign Host and leaves the session alone', async () => {
    const opened = await send('2025-11-25', { host: `localhost:${port}` });
    const session = String(opened.headers['mcp-session-id']);
    const sessionHeaders = {
      authorization: `Bearer ${mesh.project.key}`,
      'mcp-session-id': session,
      'mcp-protocol-version': '2025-11-25',
    };
    const url = mesh.mcpUrl(mesh.project.id);
    for (const method of ['GET', 'DELETE']) {
      const res = await rawRequest(url, {
        method,
        headers: { ...sessionHeaders, accept: 'text/event-stream', host: 'evil.example' },
      });
      expect(res.status, method).toBe(403);
      expect(JSON.parse(await res.text())).toMatchObject({
        error: { data: { code: 'host_not_allowed' } },
      });
    }
    const list = await rawRequest(url, {
      headers: { ...sessionHeaders, accept: ACCEPT, host: `localhost:${port}` },
      body: { jsonrpc: '2.0', id: 2, method: 'tools/list' },
    });
    expect(list.status).toBe(200);
    expect(await list.text()).toContain('"builtin__echo"');
  });
});
