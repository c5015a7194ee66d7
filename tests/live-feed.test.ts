// Regression: the console's live feed (GET /v1/projects/:p/events) on the authenticated mesh,
// every service as its own NATS user. The feed once subscribed to the project's `cmd.tool.>`,
// which the api's user may not: the server refused, nats.js handed the refusal to the callback
// with no message, the callback threw inside the client's parser and the api's connection
// closed. For minutes every other tenant's POST .../executions answered 503 after 5 s although
// the call ran, and the MCP facade's tools/call hung. Guarded here:
// - one project opening and closing its feed many times costs another project nothing: its
//   calls over HTTP, the SDK (a bus credential) and the MCP facade all succeed, the api's
//   connection stays open and the server logs no permission violation;
// - the feed still carries the project's calls and results, and never another project's;
// - a subscription the server refuses ends that one feed (503 at open), logged with the project,
//   and the api's connection carries on.
import { randomUUID } from 'node:crypto';
import { Writable } from 'node:stream';
import { jetstreamManager } from '@nats-io/jetstream';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { subscribeGuarded } from '@toolmesh/bus';
import { mintUser, servicePermissions } from '@toolmesh/nats-auth';
import { createClient, credentialIdOf, type Client } from '@toolmesh/client';
import { createNames, createSubjects, encodeMessage } from '@toolmesh/protocol';
import { allowViolations } from '@toolmesh/testing';
import { openLiveFeed } from '../services/api/src/live-feed.ts';
import { expectError, startTestApi } from '../services/api/src/test/support.ts';
import { startBusMesh, type BusMesh } from './support/bus-mesh.ts';
import { until } from './support/procs.ts';

let bus: BusMesh;
let base: string;
/** Project b's SDK over a bus credential of its own. */
let sdkB: Client;
/** Project b's MCP client, over the facade with b's key. */
let mcpB: McpClient;

beforeAll(async () => {
  bus = await startBusMesh();
  base = await bus.mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
  const cred = await bus.issue(bus.b.id, bus.b.key, 'sdk-b');
  const nc = await bus.connectWith(cred.creds);
  sdkB = createClient({ nc, root: bus.root, credentialId: await credentialIdOf(cred.creds) });
  mcpB = new McpClient({ name: 'live-feed-test', version: '1.0.0' });
  await mcpB.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/v1/projects/${bus.b.id}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${bus.b.key}` } },
    }),
  );
}, 120_000);

afterAll(async () => {
  await mcpB?.close();
  await sdkB?.close();
  await bus?.close();
});

/** An open feed: its `data:` events so far, and how to hang up. */
interface Feed {
  status: number;
  events: { kind: string; channel: string; name: string; body: any }[];
  /** Resolves once the route said `: connected` (the feed is live). */
  connected: Promise<void>;
  /** Resolves when the response ended, by either side. */
  ended: Promise<void>;
  close(): void;
}

async function openFeed(project: string, key: string): Promise<Feed> {
  const ctl = new AbortController();
  const res = await fetch(`${base}/v1/projects/${project}/events`, {
    headers: { authorization: `Bearer ${key}` },
    signal: ctl.signal,
  });
  const events: Feed['events'] = [];
  let onConnected!: () => void;
  const connected = new Promise<void>((r) => (onConnected = r));
  const ended = (async () => {
    if (!res.body) return;
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    try {
      for (;;) {
        const { value, done } = await reader.read();
        if (done) return;
        buf += value;
        if (buf.includes(': connected')) onConnected();
        const lines = buf.split('\n');
        buf = lines.pop() ?? '';
        for (const l of lines) if (l.startsWith('data: ')) events.push(JSON.parse(l.slice(6)));
      }
    } catch (err) {
      if (!ctl.signal.aborted) throw err;
    }
  })();
  return { status: res.status, events, connected, ended, close: () => ctl.abort() };
}

/** Project b's three ways in; each resolves with its latency once the echo came back. */
const bCalls = {
  http: async (text: string) => {
    const t0 = performance.now();
    const res = await fetch(`${base}/v1/projects/${bus.b.id}/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bus.b.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'builtin.echo', arguments: { text } }),
    });
    const body = (await res.json()) as any;
    expect(res.status, JSON.stringify(body)).toBe(200);
    expect(body.execution.status).toBe('succeeded');
    return performance.now() - t0;
  },
  sdk: async (text: string) => {
    const t0 = performance.now();
    const r = await sdkB.callTool(
      { project: bus.b.id, channel: 'main', tool: 'builtin.echo', arguments: { text } },
      { waitMs: 30_000 },
    );
    expect(r.status, JSON.stringify(r)).toBe('succeeded');
    expect(r.content.result).toEqual({ text });
    return performance.now() - t0;
  },
  mcp: async (text: string) => {
    const t0 = performance.now();
    const r = await mcpB.callTool({ name: 'builtin__echo', arguments: { text } });
    expect(r.isError, JSON.stringify(r)).toBeFalsy();
    expect(JSON.stringify(r.content)).toContain(text);
    return performance.now() - t0;
  },
};
type Way = keyof typeof bCalls;

/** Rounds of one call each way, one round at a time, until `more()` says stop. */
async function callRounds(more: (round: number) => boolean) {
  const took: Record<Way, number[]> = { http: [], sdk: [], mcp: [] };
  for (let round = 0; more(round); round++) {
    const ways = Object.keys(bCalls) as Way[];
    const ms = await Promise.all(ways.map((w) => bCalls[w](`${w}-${round}`)));
    ways.forEach((w, i) => took[w].push(ms[i]!));
  }
  return took;
}

function figures(took: Record<string, number[]>): string {
  const pct = (xs: number[], p: number) =>
    [...xs].sort((x, y) => x - y)[Math.min(xs.length - 1, Math.floor(p * xs.length))] ?? NaN;
  return Object.entries(took)
    .map(
      ([w, xs]) =>
        `${w} n=${xs.length} p50=${pct(xs, 0.5).toFixed(1)} p95=${pct(xs, 0.95).toFixed(1)} ` +
        `max=${Math.max(...xs).toFixed(1)}`,
    )
    .join('; ');
}

describe('the live feed on the authenticated mesh', () => {
  it("project a's feed opened and closed 50 times costs project b's calls nothing", async () => {
    await callRounds((round) => round < 2); // warm-up: first connections, caches
    // Without the churn first: the figures to compare with.
    const quiet = await callRounds((round) => round < 20);

    let opened = 0;
    let churning = true;
    const opens: number[] = [];
    const churn = (async () => {
      try {
        for (; opened < 50; opened++) {
          const t0 = performance.now();
          const feed = await openFeed(bus.a.id, bus.a.key);
          expect(feed.status).toBe(200);
          await feed.connected;
          opens.push(performance.now() - t0);
          feed.close();
          await feed.ended;
        }
      } finally {
        churning = false;
      }
    })();
    // At least a few rounds even if the churn is quicker than one round.
    const busy = await callRounds((round) => churning || round < 3);
    await churn;

    expect(opened).toBe(50);
    expect(bus.mesh.api.nc.isClosed()).toBe(false);
    // No permission violation on any connection: the test setup fails the test on one.
    // No feed outlives its response: its consumer is gone from the command stream.
    const jsm = await jetstreamManager(bus.admin);
    const feeds = await until(async () => {
      const names: string[] = [];
      const stream = createNames(bus.root).projectCommandStream(bus.a.id);
      for await (const c of jsm.consumers.list(stream)) names.push(c.name);
      const left = names.filter((n) => n.startsWith(`${bus.root}_feed_`));
      return left.length === 0 ? left : undefined;
    }, 10_000);
    expect(feeds).toEqual([]);
    await bus.stillServing();
    process.stderr.write(
      `b's call latencies in ms, quiet: ${figures(quiet)}\n` +
        `b's call latencies in ms, during a's feed churn: ${figures(busy)}\n` +
        `a's feed, request to ': connected' in ms: ${figures({ feed: opens })}\n`,
    );
  }, 180_000);

  it("delivers a project's calls and results as they happen, and never another project's", async () => {
    const feed = await openFeed(bus.a.id, bus.a.key);
    expect(feed.status).toBe(200);
    await feed.connected;
    // b's calls first: had they leaked, they would reach a's feed before a's own.
    await bCalls.http('b-over-http');
    await bCalls.sdk('b-over-the-sdk');
    const overHttp = await fetch(`${base}/v1/projects/${bus.a.id}/executions`, {
      method: 'POST',
      headers: { authorization: `Bearer ${bus.a.key}`, 'content-type': 'application/json' },
      body: JSON.stringify({ tool: 'builtin.echo', arguments: { text: 'a-over-http' } }),
    }).then((r) => r.json() as Promise<any>);
    expect(overHttp.execution.status).toBe('succeeded');
    const overSdk = await bus.tenant.client.callTool(
      { project: bus.a.id, channel: 'side', tool: 'builtin.echo', arguments: { text: 'a-sdk' } },
      { waitMs: 30_000 },
    );
    expect(overSdk.status).toBe('succeeded');

    const ids = [overHttp.execution.id as string, overSdk.tool_call_id];
    const seen = (kind: string, id: string) =>
      feed.events.some((e) => e.kind === kind && e.body?.tool_call_id === id);
    await until(
      () =>
        Promise.resolve(
          ids.every((id) => seen('tool.call', id) && seen('tool.result', id)) || undefined,
        ),
      10_000,
    );
    feed.close();
    await feed.ended;

    const call = feed.events.find((e) => e.kind === 'tool.call' && e.body.tool_call_id === ids[1]);
    expect(call).toMatchObject({
      channel: 'side',
      name: 'builtin',
      body: { tool_name: 'builtin.echo', arguments: { text: 'a-sdk' } },
    });
    const result = feed.events.find(
      (e) => e.kind === 'tool.result' && e.body.tool_call_id === ids[1],
    );
    expect(result).toMatchObject({
      channel: 'side',
      name: 'builtin',
      body: { status: 'succeeded' },
    });
    // Nothing of b's: none of its texts, in calls or results.
    expect(JSON.stringify(feed.events)).not.toMatch(/b-over-/);
    // No permission violation on any connection: the test setup fails the test on one.
  }, 60_000);
});

describe('a subscription the server refuses', () => {
  /** An api user that may not subscribe to chunks (`str.>`): a permissions bug, on purpose. */
  async function apiWithoutChunks(): Promise<string> {
    const perms = servicePermissions(bus.root, 'api');
    const sub = perms.sub.filter((s) => !s.endsWith('.str.>'));
    expect(sub).toHaveLength(perms.sub.length - 1);
    return (await mintUser(bus.nats.keys, 'api-without-chunks', { ...perms, sub })).creds;
  }

  it('ends that feed alone, logged with its project; the connection carries on', async () => {
    allowViolations((v) => v.kind === 'Subscription' && v.subject.includes('.str.'));
    const nc = await bus.connectWith(await apiWithoutChunks());
    const lines: any[] = [];
    const log = pino(
      { level: 'debug' },
      new Writable({
        write(chunk: Buffer, _enc, done) {
          lines.push(JSON.parse(chunk.toString()));
          done();
        },
      }),
    );
    const project = bus.a.id;
    const failed = await openLiveFeed({
      nc,
      root: bus.root,
      project,
      log: log.child({ project }),
      onEvent: () => undefined,
      onEnd: () => undefined,
    }).catch((e: unknown) => e);
    expect(failed).toBeInstanceOf(Error);
    expect(String(failed)).toMatch(/Permissions Violation/);
    expect(lines).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ project, msg: expect.stringMatching(/subscription refused/) }),
      ]),
    );
    // The connection is open and still delivers: a guarded subscription, then a throwing one,
    // on the same connection.
    expect(nc.isClosed()).toBe(false);
    const subjects = createSubjects(bus.root);
    const got: string[] = [];
    const progress = subjects.toolProgress({ project, channel: 'main', target: 'builtin' });
    const s1 = subscribeGuarded(nc, progress, {
      log,
      onMessage: () => {
        throw new Error('a handler bug');
      },
    });
    const s2 = subscribeGuarded(nc, progress, { log, onMessage: (m) => got.push(m.string()) });
    await nc.flush();
    const body = encodeMessage('tool_progress', {
      v: 1,
      tool_call_id: randomUUID(),
      tool_name: 'builtin.echo',
      at: new Date().toISOString(),
    });
    bus.admin.publish(progress, body);
    bus.admin.publish(progress, body);
    await until(() => Promise.resolve(got.length === 2 || undefined), 5_000);
    expect(nc.isClosed()).toBe(false);
    expect(lines.filter((l) => /handler threw/.test(l.msg))).toHaveLength(2);
    s1.unsubscribe();
    s2.unsubscribe();
    await nc.close();
  });

  it('answers that one feed 503 and the api goes on serving', async () => {
    allowViolations((v) => v.kind === 'Subscription' && v.subject.includes('.str.'));
    const api = await startTestApi({
      CG__NATS__SUBJECT_ROOT: bus.root,
      CG__NATS__CREDS: await apiWithoutChunks(),
    });
    try {
      const p = await api.createProject();
      const first = await api.request('GET', `/v1/projects/${p.id}/events`, { key: p.key });
      expectError(first, 503, 'unavailable');
      // Again: the same answer, from an api whose connection is still up.
      expectError(
        await api.request('GET', `/v1/projects/${p.id}/events`, { key: p.key }),
        503,
        'unavailable',
      );
      expect(api.nc.isClosed()).toBe(false);
      const queued = await api.request('POST', `/v1/projects/${p.id}/executions`, {
        key: p.key,
        body: { tool: 'builtin.echo', arguments: { text: 'x' }, wait: false },
      });
      expect(queued.status, queued.raw).toBe(202);
    } finally {
      await api.close();
    }
  }, 60_000);
});
