// Upstream OAuth 2.0 for HTTP tools and HTTP MCP servers, against real local servers started
// here: an OAuth token endpoint (client_credentials and refresh_token grants, rotating refresh
// tokens, client_secret_basic and _post), an HTTP upstream and an MCP server (the official SDK)
// that take only the tokens it issued. Two tools-service instances share one token: fetched once
// for 50 calls; a token inside the refresh margin is fetched again; a revoked token is refreshed
// once and the request sent again (a second 401 fails upstream_unauthorized); a rotated refresh
// token is written back to its secret; no token or client secret reaches a card, a log line, an
// execution row or an api answer; another project's key cannot use this project's configuration.
import { randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { createSecretBox } from '@toolmesh/store';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ToolResult } from '@toolmesh/client';
import { expectError } from '../services/api/src/test/support.ts';
import { newSecretsKey, startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';

// ---- the token endpoint ----------------------------------------------------------------------

interface TokenRequest {
  grant: string;
  client_id: string;
  via: 'basic' | 'post' | 'none';
  scope?: string;
  audience?: string;
  refresh_token?: string;
}

interface AuthServer {
  url: string;
  /** Every token request that reached it, in order. */
  requests: TokenRequest[];
  /** Every access and refresh token it issued. */
  issued: string[];
  register(clientId: string, secret: string | undefined, expiresIn?: number): void;
  /** A refresh token for a client, as a user's consent would have produced. */
  grantRefresh(clientId: string): string;
  /** Whether the resource servers take this bearer token now. */
  valid(token: string | undefined): boolean;
  revoke(token: string): void;
  close(): Promise<void>;
}

const readBody = async (req: IncomingMessage): Promise<string> => {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
};

const listen = async (server: Server) => {
  server.listen(0, '127.0.0.1');
  await new Promise((resolve) => server.once('listening', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
};

async function startAuthServer(): Promise<AuthServer> {
  const clients = new Map<string, { secret: string | undefined; expiresIn: number }>();
  const refreshTokens = new Map<string, string>(); // refresh token -> client id
  const access = new Map<string, { expiresAt: number }>();
  const requests: TokenRequest[] = [];
  const issued: string[] = [];
  const newToken = (kind: string) => {
    const t = `${kind}-${randomUUID()}`;
    issued.push(t);
    return t;
  };
  const server = createServer((req, res) => {
    void (async () => {
      const form = new URLSearchParams(await readBody(req));
      const answer = (status: number, body: unknown) => {
        res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store' });
        res.end(JSON.stringify(body));
      };
      let clientId = form.get('client_id') ?? '';
      let secret = form.get('client_secret') ?? undefined;
      let via: TokenRequest['via'] = secret === undefined ? 'none' : 'post';
      const basic = /^Basic (.+)$/.exec(req.headers.authorization ?? '');
      if (basic) {
        const [id, pw] = Buffer.from(basic[1]!, 'base64').toString('utf8').split(':');
        clientId = decodeURIComponent(id!);
        secret = decodeURIComponent(pw ?? '');
        via = 'basic';
      }
      const grant = form.get('grant_type') ?? '';
      requests.push({
        grant,
        client_id: clientId,
        via,
        ...(form.get('scope') ? { scope: form.get('scope')! } : {}),
        ...(form.get('audience') ? { audience: form.get('audience')! } : {}),
        ...(form.get('refresh_token') ? { refresh_token: form.get('refresh_token')! } : {}),
      });
      const client = clients.get(clientId);
      if (!client || client.secret !== secret) {
        answer(401, { error: 'invalid_client', error_description: 'unknown client or secret' });
        return;
      }
      const issue = (extra: Record<string, unknown> = {}) => {
        const token = newToken('at');
        access.set(token, { expiresAt: Date.now() + client.expiresIn * 1000 });
        answer(200, {
          access_token: token,
          token_type: 'Bearer',
          expires_in: client.expiresIn,
          ...extra,
        });
      };
      if (grant === 'client_credentials') return issue();
      if (grant === 'refresh_token') {
        const rt = form.get('refresh_token') ?? '';
        if (refreshTokens.get(rt) !== clientId) {
          answer(400, { error: 'invalid_grant', error_description: 'refresh token not valid' });
          return;
        }
        // Rotation: the old refresh token is spent.
        refreshTokens.delete(rt);
        const next = newToken('rt');
        refreshTokens.set(next, clientId);
        return issue({ refresh_token: next });
      }
      answer(400, { error: 'unsupported_grant_type' });
    })();
  });
  const url = await listen(server);
  return {
    url,
    requests,
    issued,
    register: (id, secret, expiresIn = 3600) => clients.set(id, { secret, expiresIn }),
    grantRefresh: (clientId) => {
      const rt = newToken('rt');
      refreshTokens.set(rt, clientId);
      return rt;
    },
    valid: (token) => {
      const a = token ? access.get(token) : undefined;
      return a !== undefined && a.expiresAt > Date.now();
    },
    revoke: (token) => void access.delete(token),
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

// ---- the protected upstreams -------------------------------------------------------------------

interface Protected {
  url: string;
  /** The bearer token of every request, in order. */
  tokens: (string | undefined)[];
  close(): Promise<void>;
}

const bearerOf = (req: IncomingMessage) =>
  /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];

/** GET /data answers 200 to a valid token (echoing the header: it must come back redacted). */
async function startApi(as: AuthServer): Promise<Protected> {
  const tokens: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    const token = bearerOf(req);
    tokens.push(token);
    if (req.url === '/always-401' || !as.valid(token)) {
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' });
      res.end(JSON.stringify({ error: 'invalid_token', you_sent: req.headers.authorization }));
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ ok: true, you_sent: req.headers.authorization }));
  });
  const url = await listen(server);
  return {
    url,
    tokens,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** A stateless streamable-HTTP MCP server (the SDK's) behind the same bearer check. */
async function startMcp(as: AuthServer): Promise<Protected> {
  const tokens: (string | undefined)[] = [];
  const server = createServer((req, res) => {
    const token = bearerOf(req);
    tokens.push(token);
    if (!as.valid(token)) {
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token"' }).end();
      return;
    }
    void (async () => {
      const mcp = new McpServer({ name: 'oauth-protected', version: '1.0.0' });
      mcp.registerTool('whoami', { description: 'says who called' }, () => ({
        content: [{ type: 'text', text: `called with ${req.headers.authorization}` }],
      }));
      const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined });
      res.on('close', () => {
        void transport.close();
        void mcp.close();
      });
      await mcp.connect(transport);
      await transport.handleRequest(req, res);
    })();
  });
  const url = await listen(server);
  return {
    url: `${url}/mcp`,
    tokens,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

// ---- the mesh ----------------------------------------------------------------------------------

const SECRETS_KEY = newSecretsKey();
const CC_SECRET = `cs-${randomUUID()}`;
const POST_SECRET = `ps-${randomUUID()}`;
const SHORT_SECRET = `ss-${randomUUID()}`;
const RT_SECRET = `rs-${randomUUID()}`;

let mesh: ToolsMesh;
let as: AuthServer;
let api: Protected;
let mcp: Protected;
let a: { id: string; key: string };
let b: { id: string; key: string };

async function putSecret(p: { id: string; key: string }, name: string, value: string) {
  const res = await mesh.request('PUT', `/v1/projects/${p.id}/secrets/${name}`, {
    key: p.key,
    body: { value },
  });
  expect([200, 201], res.raw).toContain(res.status);
}

beforeAll(async () => {
  as = await startAuthServer();
  api = await startApi(as);
  mcp = await startMcp(as);
  const env = {
    CG__SECRETS__KEY: SECRETS_KEY,
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__CONCURRENCY: '32',
  };
  mesh = await startToolsMesh({ ...env, CG__SERVICE__INSTANCE_ID: 'tools-one' });
  await mesh.startService({ CG__SERVICE__INSTANCE_ID: 'tools-two' });
  a = await mesh.api.createProject();
  b = await mesh.api.createProject();
  as.register('cc-client', CC_SECRET);
  as.register('post-client', POST_SECRET);
  as.register('short-client', SHORT_SECRET, 1);
  as.register('rt-client', RT_SECRET);
  for (const [name, value] of [
    ['token_url', `${as.url}/token`],
    ['cc_id', 'cc-client'],
    ['cc_secret', CC_SECRET],
    ['post_id', 'post-client'],
    ['post_secret', POST_SECRET],
    ['short_id', 'short-client'],
    ['short_secret', SHORT_SECRET],
    ['rt_id', 'rt-client'],
    ['rt_secret', RT_SECRET],
    ['rt', as.grantRefresh('rt-client')],
    ['wrong_secret', 'not-the-secret'],
  ] as const) {
    await putSecret(a, name, value);
  }
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await mcp?.close();
  await api?.close();
  await as?.close();
});

const cc = (over: Record<string, unknown> = {}) => ({
  type: 'oauth2',
  grant: 'client_credentials',
  token_url_secret: 'token_url',
  client_id_secret: 'cc_id',
  client_secret_secret: 'cc_secret',
  ...over,
});

async function register(
  p: { id: string; key: string },
  name: string,
  auth: Record<string, unknown>,
  path = '/data',
) {
  return mesh.request('POST', `/v1/projects/${p.id}/tools`, {
    key: p.key,
    body: {
      name,
      description: `${name} behind OAuth`,
      parameters: { type: 'object' },
      kind: 'http',
      http: { method: 'GET', url: `${api.url}${path}`, auth },
      options: { retries: { max: 0 } },
    },
  });
}

async function registerOk(
  p: { id: string; key: string },
  name: string,
  auth: Record<string, unknown>,
  path?: string,
) {
  const res = await register(p, name, auth, path);
  expect(res.status, res.raw).toBe(201);
}

const callIds: { project: string; id: string }[] = [];
const call = (tool: string, p = a): Promise<ToolResult> => {
  const toolCallId = `call-${randomUUID()}`;
  callIds.push({ project: p.id, id: toolCallId });
  return mesh.client.callTool(
    { project: p.id, channel: 'oauth', tool, arguments: {}, toolCallId },
    { waitMs: 30_000 },
  );
};

const grants = (clientId: string) => as.requests.filter((r) => r.client_id === clientId);

async function metadataOf(p: string, toolCallId: string) {
  const c = await mesh.api.store.cards.toolResult(p, toolCallId);
  expect(c).toBeDefined();
  return c!.metadata;
}

describe('configuration', () => {
  it.each([
    [
      'a client_credentials grant without a client secret',
      { ...cc(), client_secret_secret: undefined },
      'client_secret_secret',
    ],
    [
      'a refresh_token grant without a refresh token',
      {
        type: 'oauth2',
        grant: 'refresh_token',
        token_url_secret: 'token_url',
        client_id_secret: 'rt_id',
      },
      'refresh_token_secret',
    ],
    [
      'a refresh token with client_credentials',
      cc({ refresh_token_secret: 'rt' }),
      'refresh_token_secret',
    ],
    ['a secret name that is not an id', cc({ client_id_secret: 'no spaces' }), 'client_id_secret'],
    ['an unknown grant', cc({ grant: 'password' }), 'grant'],
    ['an unknown field', cc({ client_secret: CC_SECRET }), 'client_secret'],
    ['a scope with a line break', cc({ scope: 'read\nwrite' }), 'scope'],
  ])('refuses %s with a 400 that names the field', async (_what, auth, field) => {
    const res = await register(a, `bad.t${randomUUID().slice(0, 8)}`, auth);
    expectError(res, 400, 'invalid_request');
    expect(res.raw).toContain(field);
    expect(res.raw).not.toContain(CC_SECRET);
  });

  it('refuses an oauth2 MCP server configuration without a client secret, and one that names no grant', async () => {
    for (const auth of [
      { ...cc(), client_secret_secret: undefined },
      { type: 'oauth2', token_url_secret: 'token_url', client_id_secret: 'cc_id' },
    ]) {
      const res = await mesh.request('POST', `/v1/projects/${a.id}/mcp-servers`, {
        key: a.key,
        body: { name: 'badmcp', transport: 'http', url: mcp.url, auth },
      });
      expectError(res, 400, 'invalid_request');
    }
  });
});

describe('client credentials', () => {
  let ccToken: string;
  it('fetches one token for 50 calls spread over two instances', async () => {
    await registerOk(a, 'acme.data', cc({ scope: 'read write', audience: 'https://acme.test' }));
    const results = await Promise.all(Array.from({ length: 50 }, () => call('acme.data')));
    for (const r of results) expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const fetched = grants('cc-client');
    expect(fetched).toHaveLength(1);
    expect(fetched[0]).toMatchObject({
      grant: 'client_credentials',
      via: 'basic',
      scope: 'read write',
      audience: 'https://acme.test',
    });
    const rows = await mesh.api.store.pool.query<{ instance_id: string }>(
      `SELECT instance_id FROM state.tool_executions WHERE project_id = $1 AND tool_name = 'acme.data'`,
      [a.id],
    );
    expect(rows.rows).toHaveLength(50);
    expect(new Set(rows.rows.map((r) => r.instance_id))).toEqual(
      new Set(['tools-one', 'tools-two']),
    );
    // Every request carried the one token, which the upstream echoed back redacted.
    ccToken = api.tokens.at(-1)!;
    expect(new Set(api.tokens.slice(-50))).toEqual(new Set([ccToken]));
    expect(as.valid(ccToken)).toBe(true);
    expect(results[0]!.content.result).toEqual({ ok: true, you_sent: 'Bearer [redacted]' });
    // Cached once, sealed: the row does not hold the token in the clear.
    const cached = await mesh.api.store.pool.query<{ ciphertext: Buffer }>(
      'SELECT ciphertext FROM state.oauth_tokens WHERE project_id = $1',
      [a.id],
    );
    expect(cached.rows).toHaveLength(1);
    expect(cached.rows[0]!.ciphertext.toString('latin1')).not.toContain(ccToken);
  });

  it('sends the client secret in the body with client_secret_post', async () => {
    await registerOk(
      a,
      'acme.post',
      cc({
        client_id_secret: 'post_id',
        client_secret_secret: 'post_secret',
        client_auth: 'client_secret_post',
      }),
    );
    const r = await call('acme.post');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(grants('post-client')).toEqual([
      expect.objectContaining({ grant: 'client_credentials', via: 'post' }),
    ]);
  });

  it('fetches a new token once the cached one is inside the refresh margin', async () => {
    // expires_in 1 s against the default margin of 60 s: every call finds its token stale.
    await registerOk(
      a,
      'acme.short',
      cc({ client_id_secret: 'short_id', client_secret_secret: 'short_secret' }),
    );
    for (let i = 0; i < 3; i++) {
      const r = await call('acme.short');
      expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    }
    expect(grants('short-client')).toHaveLength(3);
    expect(new Set(api.tokens.slice(-3)).size).toBe(3);
  });

  it('refreshes once after a 401 and sends the request again, within one attempt', async () => {
    const before = grants('cc-client').length;
    as.revoke(ccToken);
    const r = await call('acme.data');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(grants('cc-client')).toHaveLength(before + 1);
    const meta = await metadataOf(a.id, callIds.at(-1)!.id);
    expect(meta['oauth_refreshed_after_401']).toBe(true);
    expect(meta['attempts']).toEqual([
      expect.objectContaining({ attempt: 1, outcome: 'succeeded' }),
    ]);
    // The other instance, still holding the revoked token in memory, takes the new one from
    // Postgres after its own 401 instead of asking the token endpoint again.
    const again = await Promise.all(Array.from({ length: 10 }, () => call('acme.data')));
    for (const x of again) expect(x.status, JSON.stringify(x.content)).toBe('succeeded');
    expect(grants('cc-client')).toHaveLength(before + 1);
  });

  it('fails upstream_unauthorized when the refreshed token is refused too', async () => {
    // The same configuration as acme.data: it shares that tool's cached token.
    await registerOk(
      a,
      'acme.locked',
      cc({ scope: 'read write', audience: 'https://acme.test' }),
      '/always-401',
    );
    const before = grants('cc-client').length;
    const hits = api.tokens.length;
    const r = await call('acme.locked');
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('upstream_unauthorized');
    expect(r.content.error?.details).toMatchObject({ status: 401 });
    // One forced refresh, two requests, no regular retry.
    expect(grants('cc-client')).toHaveLength(before + 1);
    expect(api.tokens.length - hits).toBe(2);
    expect(JSON.stringify(r.content)).toContain('[redacted]');
  });

  it('fails oauth_failed when the token endpoint refuses the client', async () => {
    await registerOk(a, 'acme.wrong', cc({ client_secret_secret: 'wrong_secret' }));
    const r = await call('acme.wrong');
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('oauth_failed');
    expect(r.content.error?.details).toMatchObject({
      grant: 'client_credentials',
      status: 401,
      oauth_error: 'invalid_client',
    });
    expect(JSON.stringify(r.content)).not.toContain('not-the-secret');
  });

  it('fails secret_unavailable when a credential is not stored', async () => {
    await registerOk(a, 'acme.nosecret', cc({ client_secret_secret: 'never_stored' }));
    const r = await call('acme.nosecret');
    expect(r.content.error?.code).toBe('secret_unavailable');
    expect(r.content.error?.details).toEqual({ secret: 'never_stored' });
  });
});

describe('refresh token', () => {
  it('exchanges the stored refresh token and stores the rotated one', async () => {
    const box = createSecretBox(SECRETS_KEY);
    const stored = async () =>
      box.open(a.id, 'rt', (await mesh.api.store.secrets.get(a.id, 'rt'))!);
    const first = await stored();
    await registerOk(a, 'acme.user', {
      type: 'oauth2',
      grant: 'refresh_token',
      token_url_secret: 'token_url',
      client_id_secret: 'rt_id',
      client_secret_secret: 'rt_secret',
      refresh_token_secret: 'rt',
    });
    const r = await call('acme.user');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(grants('rt-client')).toEqual([
      expect.objectContaining({ grant: 'refresh_token', refresh_token: first }),
    ]);
    const second = await stored();
    expect(second).not.toBe(first);
    expect(second.startsWith('rt-')).toBe(true);

    // Cached: no new exchange. Revoked: one exchange with the rotated refresh token.
    expect((await call('acme.user')).status).toBe('succeeded');
    expect(grants('rt-client')).toHaveLength(1);
    as.revoke(api.tokens.at(-1)!);
    const again = await call('acme.user');
    expect(again.status, JSON.stringify(again.content)).toBe('succeeded');
    expect(grants('rt-client')).toHaveLength(2);
    expect(grants('rt-client')[1]).toMatchObject({ refresh_token: second });
    expect(await stored()).not.toBe(second);
  });
});

describe('MCP server', () => {
  it('discovers and calls an OAuth-protected MCP server, refreshing after a 401', async () => {
    as.register('mcp-client', CC_SECRET);
    await putSecret(a, 'mcp_id', 'mcp-client');
    const res = await mesh.request('POST', `/v1/projects/${a.id}/mcp-servers`, {
      key: a.key,
      body: {
        name: 'guarded',
        transport: 'http',
        url: mcp.url,
        auth: cc({ client_id_secret: 'mcp_id' }),
      },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body['state']).toBe('connected');
    expect(res.body['auth']).toMatchObject({ type: 'oauth2', client_id_secret: 'mcp_id' });
    const r = await call('guarded.whoami');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    // The server echoes the header it got: the token comes back redacted.
    expect(r.content.result).toEqual({
      content: [{ type: 'text', text: 'called with Bearer [redacted]' }],
    });
    expect(grants('mcp-client')).toHaveLength(1);
    expect(mcp.tokens.every((t) => t === mcp.tokens[0])).toBe(true);

    as.revoke(mcp.tokens[0]!);
    const again = await call('guarded.whoami');
    expect(again.status, JSON.stringify(again.content)).toBe('succeeded');
    expect(grants('mcp-client')).toHaveLength(2);
    expect(mcp.tokens.at(-1)).not.toBe(mcp.tokens[0]);
  });
});

describe('isolation', () => {
  it("another project cannot use this project's OAuth configuration or secrets", async () => {
    const before = as.requests.length;
    // Its key cannot register or call tools in project a.
    const res = await mesh.request('POST', `/v1/projects/${a.id}/tools`, {
      key: b.key,
      body: {
        name: 'steal.data',
        description: 'x',
        parameters: { type: 'object' },
        kind: 'http',
        http: { method: 'GET', url: `${api.url}/data`, auth: cc() },
      },
    });
    expect([401, 403, 404]).toContain(res.status);
    expectError(
      await mesh.request('GET', `/v1/projects/${a.id}/tools/acme.data`, { key: b.key }),
      404,
      'not_found',
    );
    // The same configuration in its own project names secrets it does not have: refused, and
    // neither a's cached token nor a's credentials are used.
    await registerOk(b, 'acme.data', cc());
    const r = await call('acme.data', b);
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('secret_unavailable');
    expect(as.requests.length).toBe(before);
    const rows = await mesh.api.store.pool.query(
      'SELECT 1 FROM state.oauth_tokens WHERE project_id = $1',
      [b.id],
    );
    expect(rows.rows).toHaveLength(0);
  });
});

describe('tokens never leak', () => {
  it('no card, log line, execution row or api answer holds a token or a client secret', async () => {
    const cards = await mesh.api.store.pool.query('SELECT content, metadata FROM cards');
    const executions = await mesh.api.store.pool.query(
      'SELECT row_to_json(e) AS row FROM state.tool_executions e WHERE project_id = ANY($1)',
      [[a.id, b.id]],
    );
    expect(executions.rows.length).toBeGreaterThan(60);
    const needles = [
      CC_SECRET,
      POST_SECRET,
      SHORT_SECRET,
      RT_SECRET,
      'not-the-secret',
      ...as.issued,
    ];
    expect(as.issued.length).toBeGreaterThan(8);
    for (const text of [
      JSON.stringify(cards.rows),
      JSON.stringify(executions.rows),
      mesh.logs.join('\n'),
      mesh.responses.join('\n'),
    ]) {
      for (const n of needles) expect(text).not.toContain(n);
    }
    expect(mesh.logs.join('\n')).toContain('fetched an OAuth access token');
  });
});
