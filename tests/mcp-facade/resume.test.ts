// SSE resumability of a 2025-11-25 session: every SSE stream (each POST's, and the session's GET
// stream) opens with a priming event (an id, `retry` as [api] mcp_sse_retry_ms, empty data), and
// a client whose stream broke gets what it missed by a GET with Last-Event-ID: the answer of a
// call still running, a list change sent while it was away. Clients older than 2025-11-25 get no
// priming event (its empty data breaks them), and the 2026-07-28 revision, which has no
// resumption, sends none either: its listen stream opens with the acknowledgement.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { rawRequest, type RawResponse, type SseEvent } from './raw-http.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh({ CG__API__MCP_SSE_RETRY_MS: '250' });
});
afterAll(async () => mesh?.close());

const ACCEPT = 'application/json, text/event-stream';
const PRIMING = { id: expect.any(String), retry: 250, data: '' };

interface Session {
  id: string;
  version: string;
  /** The events of the initialize response. */
  opening: SseEvent[];
  post(body: unknown): Promise<RawResponse>;
  get(lastEventId?: string): Promise<RawResponse>;
}

async function events(res: RawResponse): Promise<SseEvent[]> {
  const all: SseEvent[] = [];
  for (let e = await res.nextEvent(); e; e = await res.nextEvent()) all.push(e);
  return all;
}

/** Reads events until the JSON-RPC message `match` accepts; returns that message. */
async function until(res: RawResponse, match: (m: Record<string, unknown>) => boolean) {
  for (let e = await res.nextEvent(); e; e = await res.nextEvent()) {
    if (e.data === '') continue;
    const m = JSON.parse(e.data) as Record<string, unknown>;
    if (match(m)) return m;
  }
  throw new Error('the stream ended first');
}

async function open(version: string): Promise<Session> {
  const url = mesh.mcpUrl(mesh.project.id);
  const auth = { authorization: `Bearer ${mesh.project.key}` };
  const init = await rawRequest(url, {
    headers: { ...auth, accept: ACCEPT },
    body: {
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: {
        protocolVersion: version,
        capabilities: {},
        clientInfo: { name: 'raw', version: '1' },
      },
    },
  });
  expect(init.status).toBe(200);
  const id = String(init.headers['mcp-session-id']);
  const opening = await events(init);
  const headers = { ...auth, 'mcp-session-id': id, 'mcp-protocol-version': version };
  const post = (body: unknown) =>
    rawRequest(url, { headers: { ...headers, accept: ACCEPT }, body });
  const initialized = await post({ jsonrpc: '2.0', method: 'notifications/initialized' });
  expect(initialized.status).toBe(202);
  return {
    id,
    version,
    opening,
    post,
    get: (lastEventId) =>
      rawRequest(url, {
        method: 'GET',
        headers: {
          ...headers,
          accept: 'text/event-stream',
          ...(lastEventId ? { 'last-event-id': lastEventId } : {}),
        },
      }),
  };
}

describe('SSE streams of a 2025-11-25 session', () => {
  it('open each POST stream with a priming event', async () => {
    const s = await open('2025-11-25');
    expect(s.opening[0]).toEqual(PRIMING);
    expect(JSON.parse(s.opening[1]!.data)).toMatchObject({ id: 0, result: { serverInfo: {} } });
    const list = await s.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' });
    const [first, answer] = await events(list);
    expect(first).toEqual(PRIMING);
    expect(first!.id).not.toBe(s.opening[0]!.id);
    expect(JSON.parse(answer!.data)).toMatchObject({ id: 1, result: { tools: expect.any(Array) } });
  });

  it('open the GET stream with one, and replay from it what the client missed', async () => {
    const s = await open('2025-11-25');
    const stream = await s.get();
    expect(stream.status).toBe(200);
    const first = await stream.nextEvent();
    expect(first).toEqual(PRIMING);
    stream.close();
    // While the client is away, the registry changes: a list_changed for this session.
    const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/tools`, {
      key: mesh.project.key,
      body: {
        name: 'crm.resume_lookup',
        description: 'Looks a customer up',
        parameters: { type: 'object', properties: { id: { type: 'string' } } },
      },
    });
    expect(res.status, res.raw).toBe(201);
    const resumed = await s.get(first!.id);
    expect(resumed.status).toBe(200);
    const changed = await until(resumed, (m) => m['method'] !== undefined);
    expect(changed).toMatchObject({ method: 'notifications/tools/list_changed' });
    resumed.close();
  });

  it('resume a POST stream that broke during a call: the answer comes on the new stream', async () => {
    const s = await open('2025-11-25');
    const call = await s.post({
      jsonrpc: '2.0',
      id: 7,
      method: 'tools/call',
      params: { name: 'builtin__sleep', arguments: { ms: 1_000 } },
    });
    const primed = await call.nextEvent();
    expect(primed).toEqual(PRIMING);
    call.close();
    const resumed = await s.get(primed!.id);
    expect(resumed.status).toBe(200);
    const answer = await until(resumed, (m) => m['id'] === 7);
    expect(answer).toMatchObject({
      id: 7,
      result: { structuredContent: { slept_ms: expect.any(Number) } },
    });
    resumed.close();
  });
});

describe('SSE streams without resumption', () => {
  it('carry no priming event for a 2025-06-18 client (its SDK parses every data line)', async () => {
    const s = await open('2025-06-18');
    expect(JSON.parse(s.opening[0]!.data)).toMatchObject({ id: 0, result: {} });
    const [first] = await events(await s.post({ jsonrpc: '2.0', id: 1, method: 'tools/list' }));
    expect(JSON.parse(first!.data)).toMatchObject({ id: 1, result: {} });
  });

  it('carry none on 2026-07-28: the listen stream opens with its acknowledgement', async () => {
    const listen = await rawRequest(mesh.mcpUrl(mesh.project.id), {
      headers: {
        authorization: `Bearer ${mesh.project.key}`,
        accept: ACCEPT,
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'subscriptions/listen',
      },
      body: {
        jsonrpc: '2.0',
        id: 1,
        method: 'subscriptions/listen',
        params: {
          notifications: { toolsListChanged: true },
          _meta: {
            'io.modelcontextprotocol/protocolVersion': '2026-07-28',
            'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
            'io.modelcontextprotocol/clientCapabilities': {},
          },
        },
      },
    });
    expect(listen.status).toBe(200);
    const first = await listen.nextEvent();
    expect(first).toMatchObject({ id: undefined, retry: undefined });
    expect(JSON.parse(first!.data)).toMatchObject({
      method: 'notifications/subscriptions/acknowledged',
    });
    listen.close();
  });
});
