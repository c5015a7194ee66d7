// Red team, area "crowding out on the API": one tenant (or anyone who reaches the port) taking
// a shared part of an api instance so that another tenant is refused, each shown bounded by a
// share of its own, with the other project (or address) served beside it:
// - MCP sessions: one project filling the instance-wide mcp_max_sessions;
// - event streams (GET /events, an MCP session's GET stream): one project holding them all;
// - open requests: one key holding every connection with valid, long requests;
// - slow headers (no key needed): sockets trickling header lines, and many sockets from one
//   address;
// - API keys: an admin key minting keys without end (each with a rate limit of its own);
// - failed authentications from a shared address (a NAT, a proxy) locking out a valid key.
import { once } from 'node:events';
import { request as httpRequest, type ClientRequest, type IncomingMessage } from 'node:http';
import { connect, type Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  ADMIN_KEY,
  expectError,
  startTestApi,
  type TestApi,
} from '../../services/api/src/test/support.ts';

interface Answer {
  status: number;
  body: any;
  headers: IncomingMessage['headers'];
}

/** A request over a real socket from a chosen local address (127.0.0.0/8 is all loopback). */
function send(
  port: number,
  o: {
    method?: string;
    path: string;
    key?: string;
    body?: unknown;
    headers?: Record<string, string>;
    from?: string;
  },
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: o.method ?? 'GET',
        path: o.path,
        localAddress: o.from ?? '127.0.0.1',
        agent: false,
        headers: {
          ...(o.key ? { authorization: `Bearer ${o.key}` } : {}),
          ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...o.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let body: unknown;
          try {
            body = JSON.parse(text);
          } catch {
            body = text;
          }
          resolve({ status: res.statusCode ?? 0, body, headers: res.headers });
        });
      },
    );
    req.on('error', reject);
    req.end(o.body === undefined ? undefined : JSON.stringify(o.body));
  });
}

/** An open event stream: its response has begun; close() ends it from the client's side. */
interface Stream {
  status: number;
  body: any;
  close(): void;
}

/** Opens a stream, or reads the refusal (a JSON error) in full. */
function openStream(
  port: number,
  o: {
    path: string;
    key: string;
    method?: string;
    headers?: Record<string, string>;
    body?: unknown;
  },
): Promise<Stream> {
  return new Promise((resolve, reject) => {
    const req: ClientRequest = httpRequest(
      {
        host: '127.0.0.1',
        port,
        method: o.method ?? 'GET',
        path: o.path,
        agent: false,
        headers: {
          authorization: `Bearer ${o.key}`,
          accept: 'text/event-stream',
          ...(o.body !== undefined ? { 'content-type': 'application/json' } : {}),
          ...o.headers,
        },
      },
      (res) => {
        const status = res.statusCode ?? 0;
        const close = () => req.destroy();
        if ((res.headers['content-type'] ?? '').startsWith('text/event-stream')) {
          // Open once the first bytes came (the events route's `: connected`).
          res.once('data', () => resolve({ status, body: undefined, close }));
          return;
        }
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          resolve({ status, body: text ? JSON.parse(text) : undefined, close });
        });
      },
    );
    req.on('error', reject);
    req.end(o.body === undefined ? undefined : JSON.stringify(o.body));
  });
}

const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: {
    protocolVersion: '2025-11-25',
    capabilities: {},
    clientInfo: { name: 'rt', version: '1' },
  },
};
const mcpHeaders = { accept: 'application/json, text/event-stream' };

async function listening(env: Record<string, string>): Promise<{ api: TestApi; port: number }> {
  const api = await startTestApi(env);
  const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
  return { api, port: Number(new URL(address).port) };
}

describe('MCP sessions, API keys and failed authentications', () => {
  let api: TestApi;
  let port: number;
  let a: { id: string; key: string };
  let b: { id: string; key: string };
  let c: { id: string; key: string };

  beforeAll(async () => {
    ({ api, port } = await listening({
      CG__API__MCP_MAX_SESSIONS: '4',
      CG__API__MCP_MAX_SESSIONS_PER_PROJECT: '2',
      CG__API__MAX_KEYS_PER_PROJECT: '3',
    }));
    a = await api.createProject();
    b = await api.createProject();
    c = await api.createProject();
  });
  afterAll(async () => api?.close());

  const initializeAs = (p: { id: string; key: string }) =>
    send(port, {
      method: 'POST',
      path: `/v1/projects/${p.id}/mcp`,
      key: p.key,
      body: initialize,
      headers: mcpHeaders,
    });

  it("one project filling its MCP sessions leaves the instance's others to other projects", async () => {
    const sessions: string[] = [];
    for (let i = 0; i < 2; i++) {
      const res = await initializeAs(a);
      expect(res.status, JSON.stringify(res.body)).toBe(200);
      sessions.push(String(res.headers['mcp-session-id']));
    }
    const refused = await initializeAs(a);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('mcp_session_limit');
    expect(refused.body.error.message).toContain('mcp_max_sessions_per_project');
    // Project b still opens sessions on the same instance.
    for (let i = 0; i < 2; i++) expect((await initializeAs(b)).status).toBe(200);
    // Now the instance is full (4): a third project is told so, as the instance's refusal.
    const full = await initializeAs(c);
    expect(full.status).toBe(503);
    expect(full.body.error.code).toBe('mcp_session_capacity');
    // Ending a session gives its place back to its project.
    const ended = await send(port, {
      method: 'DELETE',
      path: `/v1/projects/${a.id}/mcp`,
      key: a.key,
      headers: {
        ...mcpHeaders,
        'mcp-session-id': sessions[0]!,
        'mcp-protocol-version': '2025-11-25',
      },
    });
    expect(ended.status).toBe(200);
    expect((await initializeAs(a)).status).toBe(200);
  });

  it('bounds the API keys of a project: 409 key_limit, other projects unaffected', async () => {
    // c holds its first key; the limit is 3.
    const mint = (p: { id: string }, name: string) =>
      api.request('POST', `/v1/projects/${p.id}/keys`, { key: ADMIN_KEY, body: { name } });
    expect((await mint(c, 'k2')).status).toBe(201);
    const k3 = await mint(c, 'k3');
    expect(k3.status).toBe(201);
    const refused = await mint(c, 'k4');
    expectError(refused, 409, 'key_limit');
    expect(refused.body.error.message).toContain('max_keys_per_project');
    expect(refused.body.error.details.limit).toBe(3);
    // Mints at once cannot pass the limit together.
    const burst = await Promise.all([mint(c, 'x1'), mint(c, 'x2'), mint(c, 'x3')]);
    expect(burst.map((r) => r.status)).toEqual([409, 409, 409]);
    const active = (await api.store.projects.listKeys(c.id)).filter((k) => !k.revoked_at);
    expect(active).toHaveLength(3);
    // Another project mints its own.
    expect((await mint(b, 'k2')).status).toBe(201);
    // Revoking one makes room.
    const revoked = await api.request(
      'DELETE',
      `/v1/projects/${c.id}/keys/${k3.body.key_id as string}`,
      { key: ADMIN_KEY },
    );
    expect(revoked.status).toBe(204);
    expect((await mint(c, 'k5')).status).toBe(201);
  });

  it('never locks out a valid key because others failed from its address, and still stops guessing', async () => {
    const from = (address: string, key: string) =>
      api.app.inject({
        method: 'GET',
        url: `/v1/projects/${a.id}/tools`,
        remoteAddress: address,
        headers: { authorization: `Bearer ${key}` },
      });
    const nat = '198.51.100.77';
    const limit = api.config.api.auth_failure_limit;
    // Another client behind the same NAT sends wrong keys past the limit.
    for (let i = 0; i < limit + 5; i++) {
      const res = await from(nat, `tmk_${'x'.repeat(39)}${String(i).padStart(4, '0')}`);
      expect(res.statusCode).toBe(i < limit ? 401 : 429);
    }
    const guess = await from(nat, `tmk_${'y'.repeat(43)}`);
    expect(guess.statusCode).toBe(429);
    expect(guess.json().error.code).toBe('rate_limited');
    // The tenant's valid key from the same address is served.
    const valid = await from(nat, a.key);
    expect(valid.statusCode, valid.body).toBe(200);
    // Guessing goes on being refused: wrong keys, and the admin key (the one a person chooses).
    expect((await from(nat, `tmk_${'z'.repeat(43)}`)).statusCode).toBe(429);
    expect((await from(nat, 'not-a-key')).statusCode).toBe(429);
    expect((await from(nat, ADMIN_KEY)).statusCode).toBe(429);
  });
});

describe('event streams', () => {
  let api: TestApi;
  let port: number;
  let a: { id: string; key: string };
  let b: { id: string; key: string };
  let c: { id: string; key: string };

  beforeAll(async () => {
    ({ api, port } = await listening({
      CG__API__SSE_MAX_STREAMS: '4',
      CG__API__SSE_MAX_STREAMS_PER_PROJECT: '2',
    }));
    a = await api.createProject();
    b = await api.createProject();
    c = await api.createProject();
  });
  afterAll(async () => api?.close());

  const events = (p: { id: string; key: string }) =>
    openStream(port, { path: `/v1/projects/${p.id}/events`, key: p.key });
  async function session(p: { id: string; key: string }): Promise<string> {
    const res = await send(port, {
      method: 'POST',
      path: `/v1/projects/${p.id}/mcp`,
      key: p.key,
      body: initialize,
      headers: mcpHeaders,
    });
    expect(res.status).toBe(200);
    return String(res.headers['mcp-session-id']);
  }
  const sessionStream = (p: { id: string; key: string }, id: string) =>
    openStream(port, {
      path: `/v1/projects/${p.id}/mcp`,
      key: p.key,
      headers: { 'mcp-session-id': id, 'mcp-protocol-version': '2025-11-25' },
    });

  it('one project holding its streams leaves streams to other projects', async () => {
    const aSession = await session(a);
    const bSession = await session(b);
    const held = [await events(a), await events(a)];
    for (const s of held) expect(s.status).toBe(200);
    const refused = await events(a);
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('stream_limit');
    expect(refused.body.error.message).toContain('sse_max_streams_per_project');
    // An MCP session's notification stream is an event stream of the same share.
    const aGet = await sessionStream(a, aSession);
    expect(aGet.status).toBe(429);
    expect(aGet.body.error.code).toBe('stream_limit');
    // So is a 2026-07-28 subscriptions/listen.
    const listen = await openStream(port, {
      method: 'POST',
      path: `/v1/projects/${a.id}/mcp`,
      key: a.key,
      headers: { ...mcpHeaders, 'mcp-protocol-version': '2026-07-28' },
      body: {
        jsonrpc: '2.0',
        id: 'listen-1',
        method: 'subscriptions/listen',
        params: { notifications: { toolsListChanged: true } },
      },
    });
    expect(listen.status).toBe(429);
    expect(listen.body.error.code).toBe('stream_limit');
    // Project b streams: its events and its MCP session's GET stream.
    const other = await events(b);
    expect(other.status).toBe(200);
    const bGet = await sessionStream(b, bSession);
    expect(bGet.status).toBe(200);
    // The instance holds 4 now: a third project is refused as the instance's refusal.
    const full = await events(c);
    expect(full.status).toBe(503);
    expect(full.body.error.code).toBe('stream_capacity');
    // A closed stream gives its place back (the server sees the close a moment later).
    held[0]!.close();
    let again = await events(a);
    for (let i = 0; i < 100 && again.status !== 200; i++) {
      await new Promise((r) => setTimeout(r, 50));
      again = await events(a);
    }
    expect(again.status).toBe(200);
    for (const s of [again, held[1]!, other, bGet]) s.close();
  });
});

describe('open requests per key', () => {
  let api: TestApi;
  let port: number;
  let p: { id: string; key: string };
  let q: { id: string; key: string };

  beforeAll(async () => {
    ({ api, port } = await listening({
      CG__API__MAX_INFLIGHT_REQUESTS_PER_KEY: '2',
      CG__API__SSE_MAX_STREAMS_PER_PROJECT: '10',
    }));
    p = await api.createProject();
    q = await api.createProject();
  });
  afterAll(async () => api?.close());

  it('a key holding its open requests is refused the next; its other keys and projects are not', async () => {
    const second = await api.request('POST', `/v1/projects/${p.id}/keys`, {
      key: p.key,
      body: { name: 'second' },
    });
    expect(second.status).toBe(201);
    const held = [
      await openStream(port, { path: `/v1/projects/${p.id}/events`, key: p.key }),
      await openStream(port, { path: `/v1/projects/${p.id}/events`, key: p.key }),
    ];
    for (const s of held) expect(s.status).toBe(200);
    const refused = await send(port, { path: `/v1/projects/${p.id}`, key: p.key });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('inflight_limit');
    expect(refused.body.error.message).toContain('max_inflight_requests_per_key');
    // The project's other key, and another project, are served.
    expect(
      (await send(port, { path: `/v1/projects/${p.id}`, key: String(second.body.key) })).status,
    ).toBe(200);
    expect((await send(port, { path: `/v1/projects/${q.id}`, key: q.key })).status).toBe(200);
    for (const s of held) s.close();
  });
});

describe('slow clients and many sockets from one address', () => {
  let api: TestApi;
  let port: number;
  const PER_ADDRESS = 6;

  beforeAll(async () => {
    ({ api, port } = await listening({
      CG__API__HEADERS_TIMEOUT_MS: '1000',
      CG__API__REQUEST_TIMEOUT_MS: '2000',
      CG__API__MAX_CONNECTIONS_PER_ADDRESS: String(PER_ADDRESS),
    }));
  });
  afterAll(async () => api?.close());

  /** A socket that sends a request line and then one header line every 200 ms, for ever. */
  async function slowloris(from: string): Promise<{ socket: Socket; closed: Promise<string> }> {
    const socket = connect({ host: '127.0.0.1', port, localAddress: from });
    await once(socket, 'connect');
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('utf8')));
    socket.on('error', () => undefined);
    socket.write('GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n');
    let n = 0;
    const drip = setInterval(() => {
      if (!socket.destroyed) socket.write(`x-slow-${n++}: y\r\n`);
    }, 200);
    const closed = new Promise<string>((resolve) =>
      socket.once('close', () => {
        clearInterval(drip);
        resolve(answer);
      }),
    );
    return { socket, closed };
  }

  it('closes sockets that trickle their headers, while another address is served', async () => {
    const slow = await Promise.all(
      Array.from({ length: PER_ADDRESS }, () => slowloris('127.0.0.3')),
    );
    // Meanwhile another address is served at once.
    const other = await send(port, { path: '/healthz', from: '127.0.0.2' });
    expect(other.status).toBe(200);
    // The api ends each slow socket (408) within headers_timeout_ms and a check interval (a
    // second): this test's timeout, 20 s, is the bound. Node's defaults hold them 60 to 90 s.
    for (const s of slow) expect(await s.closed).toMatch(/^HTTP\/1\.1 408/);
  }, 20_000);

  it('refuses connections past the per-address cap with 429, other addresses unaffected', async () => {
    const slow = await Promise.all(
      Array.from({ length: PER_ADDRESS }, () => slowloris('127.0.0.4')),
    );
    const refused = await send(port, { path: '/healthz', from: '127.0.0.4' });
    expect(refused.status).toBe(429);
    expect(refused.body.error.code).toBe('connection_limit');
    expect(refused.body.error.message).toContain('max_connections_per_address');
    expect((await send(port, { path: '/healthz', from: '127.0.0.5' })).status).toBe(200);
    for (const s of slow) s.socket.destroy();
    await Promise.all(slow.map((s) => s.closed));
  });
});
