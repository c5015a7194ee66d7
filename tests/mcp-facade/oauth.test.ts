// The facade as an OAuth resource server: a small authorization server stand-in serves its JWKS
// over HTTP (keys made and tokens signed with `jose`); the api checks tokens against it. Covered:
// Protected Resource Metadata, a valid token through the SDK client, the 401 challenge, and
// refusals of an expired token, one for another audience (another project's resource), one
// without the scope, one naming another project; project keys keep working.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT, exportJWK, generateKeyPair, type CryptoKey } from 'jose';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

const RESOURCE_BASE = 'https://mesh.example.test';
const ISSUER = 'https://auth.example.test';

let mesh: FacadeMesh;
let jwksServer: Server;
let privateKey: CryptoKey;
let other: { id: string; key: string };

beforeAll(async () => {
  const pair = await generateKeyPair('ES256');
  privateKey = pair.privateKey;
  const jwk = { ...(await exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
  jwksServer = createServer((_req, res) => {
    res.setHeader('content-type', 'application/json');
    res.end(JSON.stringify({ keys: [jwk] }));
  });
  await new Promise<void>((r) => jwksServer.listen(0, '127.0.0.1', r));
  const port = (jwksServer.address() as AddressInfo).port;
  mesh = await startFacadeMesh(
    {
      CG__MCP_OAUTH__ISSUER: ISSUER,
      CG__MCP_OAUTH__JWKS_URL: `http://127.0.0.1:${port}/jwks.json`,
      CG__MCP_OAUTH__RESOURCE_BASE_URL: RESOURCE_BASE,
    },
    { skills: false },
  );
  other = await mesh.api.createProject();
});
afterAll(async () => {
  await mesh?.close();
  await new Promise((r) => jwksServer?.close(r));
});

const resourceOf = (project: string) => `${RESOURCE_BASE}/v1/projects/${project}/mcp`;

function token(o: { project?: string; aud?: string; scope?: string; exp?: number } = {}) {
  const project = o.project ?? mesh.project.id;
  return new SignJWT({ scope: o.scope ?? 'mcp', toolmesh_project: project })
    .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
    .setIssuer(ISSUER)
    .setAudience(o.aud ?? resourceOf(project))
    .setSubject('user-1')
    .setIssuedAt()
    .setExpirationTime(o.exp ?? Math.floor(Date.now() / 1000) + 300)
    .sign(privateKey);
}

async function initialize(bearer: string | undefined, project = mesh.project.id) {
  const res = await fetch(mesh.mcpUrl(project), {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      ...(bearer ? { authorization: `Bearer ${bearer}` } : {}),
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'initialize',
      params: {
        protocolVersion: '2025-11-25',
        capabilities: {},
        clientInfo: { name: 'r', version: '1' },
      },
    }),
  });
  await res.text();
  return { status: res.status, challenge: res.headers.get('www-authenticate') };
}

describe('OAuth resource server', () => {
  it('serves Protected Resource Metadata for each project', async () => {
    const res = await fetch(
      `${mesh.baseUrl}/.well-known/oauth-protected-resource/v1/projects/${mesh.project.id}/mcp`,
    );
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({
      resource: resourceOf(mesh.project.id),
      authorization_servers: [ISSUER],
      scopes_supported: ['mcp'],
      bearer_methods_supported: ['header'],
    });
  });

  it('accepts a valid token, with the SDK client', async () => {
    const client = await mesh.connect({ key: await token() });
    expect((await client.listTools()).tools.map((t) => t.name)).toContain('builtin__echo');
  });

  it('answers a missing token with 401 and a challenge naming the metadata', async () => {
    const res = await initialize(undefined);
    expect(res.status).toBe(401);
    expect(res.challenge).toBe(
      `Bearer resource_metadata="${RESOURCE_BASE}/.well-known/oauth-protected-resource/v1/projects/${mesh.project.id}/mcp", scope="mcp"`,
    );
  });

  it('refuses an expired token and one with the wrong audience', async () => {
    const expired = await initialize(await token({ exp: Math.floor(Date.now() / 1000) - 120 }));
    expect(expired.status).toBe(401);
    expect(expired.challenge).toContain('error="invalid_token"');
    const wrongAud = await initialize(await token({ aud: 'https://elsewhere.example.test/mcp' }));
    expect(wrongAud.status).toBe(401);
  });

  it("refuses another project's token, and a token naming another project", async () => {
    // Issued for project B's resource, sent to project A's.
    expect((await initialize(await token({ project: other.id }))).status).toBe(401);
    // A's resource as audience, but the project claim says B.
    const mixed = await new SignJWT({ scope: 'mcp', toolmesh_project: other.id })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(ISSUER)
      .setAudience(resourceOf(mesh.project.id))
      .setExpirationTime('5m')
      .sign(privateKey);
    expect((await initialize(mixed)).status).toBe(401);
    // B's own token works for B.
    expect((await initialize(await token({ project: other.id }), other.id)).status).toBe(200);
  });

  it('refuses a token without the scope with 403', async () => {
    const res = await initialize(await token({ scope: 'profile' }));
    expect(res.status).toBe(403);
    expect(res.challenge).toContain('error="insufficient_scope"');
  });

  it('keeps accepting project keys; another project key is still 404', async () => {
    expect((await initialize(mesh.project.key)).status).toBe(200);
    expect((await initialize(other.key)).status).toBe(404);
  });
});
