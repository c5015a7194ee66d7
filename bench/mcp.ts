// `pnpm bench mcp`: builtin.echo over the MCP facade (the 1.x SDK's client, streamable HTTP, a
// session of a listening api) against the same call over the toolmesh SDK (@toolmesh/client,
// straight onto the bus), sequentially, in the same run, with the skills service as its own
// process. The goal of issue 19: the facade within 2 ms p50 of the SDK path. Then one MCP
// server's own endpoint (/v1/projects/:p/mcp-servers/:name/mcp, the tools service its own
// process): its `echo` through the mesh against the same client calling the server directly
// (the goal of issue 33: within 2 ms p50). Two more figures of the same run say where that
// overhead lies: the same tool called over the bus with the toolmesh SDK (JetStream, lease,
// card, result event; no HTTP, no MCP facade), and a one-row durable INSERT in the same
// Postgres, the floor the call's card write stands on. BENCH_TIMELINE=1 adds, after the measured
// calls, up to 500 more endpoint calls with their hops timed (timeline.ts): every message under
// the subject root and of the lease bucket, and the upstream's receipt of each request.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createClient } from '@toolmesh/client';
import pg from 'pg';
import { createNames } from '@toolmesh/protocol';
import { startMcpHttpServer } from '@toolmesh/testing';
import { startTestApi } from '../services/api/src/test/support.ts';
import { summarize, table } from './stats.ts';
import { createTimeline, type Timeline } from './timeline.ts';
import { drive, spawnReady, ROOT_DIR, writeResult, stopChildren } from './support.ts';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 1_000);
const WARMUP = 200;
const GOAL_P50_OVERHEAD_MS = 2;
/** BENCH_TIMELINE=1: this many more endpoint calls, one at a time, with their hops timed. */
const TIMELINE_CALLS = process.env['BENCH_TIMELINE'] ? Math.min(CALLS, 500) : 0;

const loadAtStart = (await import('node:os')).loadavg();
// The per-key request limit stays on, far above the load, so its cost (one Postgres statement
// per batch of tokens) is part of what is measured without refusing any request.
const api = await startTestApi({
  CG__LOG__LEVEL: 'warn',
  CG__API__RATE_LIMIT_PER_MINUTE: '100000000',
  CG__API__ADMIN_RATE_LIMIT_PER_MINUTE: '100000000',
  CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
  CG__TOOLS__HEALTH_PORT: '0',
});
const children: ChildProcess[] = [];
// The NATS server runs with JWT auth: the bench's own connection is the admin user.
const nc = await api.nats.connect('admin', { noAsyncTraces: true });
const mcp = new Client({ name: 'bench', version: '1.0.0' });
try {
  children.push(
    await spawnReady(
      [join(ROOT_DIR, 'services/skills/src/main.ts')],
      api.serviceEnv('skills', { CG__LOG__LEVEL: 'info' }),
      'tool service started',
    ),
  );
  const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
  const project = await api.createProject('bench');
  const client = createClient({ nc, root: api.config.nats.subject_root });
  await mcp.connect(
    new StreamableHTTPClientTransport(new URL(`${address}/v1/projects/${project.id}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${project.key}` } },
    }),
  );

  const viaSdk = async (i: number) => {
    const r = await client.callTool({
      project: project.id,
      channel: 'bench',
      tool: 'builtin.echo',
      arguments: { i },
    });
    if (r.status !== 'succeeded') throw new Error(`sdk call ${i} ended ${r.status}`);
  };
  const viaFacade = async (i: number) => {
    const r = await mcp.callTool({ name: 'builtin__echo', arguments: { i } });
    if (r.isError) throw new Error(`facade call ${i} failed: ${JSON.stringify(r.content)}`);
  };

  await drive(WARMUP, 1, viaSdk);
  await drive(WARMUP, 1, viaFacade);
  // Alternating halves, so drift in the machine's load falls on both paths alike.
  const half = Math.floor(CALLS / 2);
  const sdk = [...(await drive(half, 1, viaSdk)).latencies];
  const facade = [...(await drive(half, 1, viaFacade)).latencies];
  sdk.push(...(await drive(half, 1, viaSdk)).latencies);
  facade.push(...(await drive(half, 1, viaFacade)).latencies);

  const s = summarize(sdk);
  const f = summarize(facade);
  const overhead = Math.round((f.p50_ms - s.p50_ms) * 1000) / 1000;
  console.log(
    table([
      { path: 'toolmesh SDK (bus)', 'p50 ms': s.p50_ms, 'p99 ms': s.p99_ms, calls: s.n },
      { path: 'MCP facade (HTTP)', 'p50 ms': f.p50_ms, 'p99 ms': f.p99_ms, calls: f.n },
    ]),
  );
  console.log(
    `facade overhead p50: ${overhead} ms (goal: at most ${GOAL_P50_OVERHEAD_MS} ms) ${overhead <= GOAL_P50_OVERHEAD_MS ? 'met' : 'NOT met'}`,
  );

  // One MCP server's own endpoint against the same server called directly.
  let timeline: Timeline | undefined;
  const upstream = await startMcpHttpServer({
    tools: ['echo'],
    onRequest: (method) => timeline?.mark(`upstream received ${method}`),
  });
  // Its own process, as deployed: in this one, its work after the result event (the ack, the
  // call's accounting) would hold up the api's answer on the same event loop.
  const tools = await spawnReady(
    [join(ROOT_DIR, 'services/tools/src/main.ts')],
    api.serviceEnv('tools', { CG__LOG__LEVEL: 'info' }),
    'tool service started',
  );
  children.push(tools);
  const added = await api.request('POST', `/v1/projects/${project.id}/mcp-servers`, {
    key: project.key,
    body: { name: 'web', transport: 'http', url: upstream.url },
  });
  if (added.status !== 201) throw new Error(`registering the bench server failed: ${added.raw}`);
  const direct = new Client({ name: 'bench-direct', version: '1.0.0' });
  await direct.connect(new StreamableHTTPClientTransport(new URL(upstream.url)));
  const perServer = new Client({ name: 'bench-server', version: '1.0.0' });
  await perServer.connect(
    new StreamableHTTPClientTransport(
      new URL(`${address}/v1/projects/${project.id}/mcp-servers/web/mcp`),
      { requestInit: { headers: { authorization: `Bearer ${project.key}` } } },
    ),
  );
  const echoOn = (c: Client, what: string) => async (i: number) => {
    const r = await c.callTool({ name: 'echo', arguments: { text: String(i) } });
    if (r.isError) throw new Error(`${what} call ${i} failed: ${JSON.stringify(r.content)}`);
  };
  const viaDirect = echoOn(direct, 'direct');
  const viaServer = echoOn(perServer, 'per-server');
  const viaBus = async (i: number) => {
    const r = await client.callTool({
      project: project.id,
      channel: 'bench',
      tool: 'web.echo',
      arguments: { text: String(i) },
    });
    if (r.status !== 'succeeded') throw new Error(`bus call ${i} ended ${r.status}`);
  };
  const probe = new pg.Client({ connectionString: api.config.postgres.url });
  await probe.connect();
  await probe.query('CREATE TABLE IF NOT EXISTS bench_commit_probe (n int)');
  const commit = async (i: number) => {
    await probe.query('INSERT INTO bench_commit_probe VALUES ($1)', [i]);
  };
  await drive(WARMUP, 1, viaDirect);
  await drive(WARMUP, 1, viaServer);
  await drive(WARMUP, 1, viaBus);
  const d1: number[] = [];
  const m1: number[] = [];
  const b1: number[] = [];
  const c1: number[] = [];
  for (let round = 0; round < 2; round++) {
    d1.push(...(await drive(half, 1, viaDirect)).latencies);
    m1.push(...(await drive(half, 1, viaServer)).latencies);
    b1.push(...(await drive(half, 1, viaBus)).latencies);
    c1.push(...(await drive(Math.ceil(half / 5), 1, commit)).latencies);
  }
  if (TIMELINE_CALLS > 0) {
    const root = api.config.nats.subject_root;
    const t = createTimeline(nc, root, {
      end: 'endpoint call answered (client)',
      since: 'the client sent tools/call',
    });
    // The call's lease is a KV write outside the subject root.
    nc.subscribe(`$KV.${createNames(root).leaseBucket}.>`, {
      callback: () => t.mark('lease written (KV)'),
    });
    await nc.flush();
    timeline = t;
    for (let i = 0; i < TIMELINE_CALLS; i++) {
      await t.record(() => viaServer(i));
    }
    timeline = undefined;
    console.log(
      `where one endpoint call's time goes (median of ${TIMELINE_CALLS} calls, one at a time):`,
    );
    console.log(`${t.print()}\n`);
  }
  await probe.query('DROP TABLE bench_commit_probe');
  await probe.end();
  const d = summarize(d1);
  const m = summarize(m1);
  const b = summarize(b1);
  const c = summarize(c1);
  const ms = (x: number) => Math.round(x * 1000) / 1000;
  const serverOverhead = ms(m.p50_ms - d.p50_ms);
  console.log(
    table([
      { path: 'MCP server directly', 'p50 ms': d.p50_ms, 'p99 ms': d.p99_ms, calls: d.n },
      { path: 'its own mesh endpoint', 'p50 ms': m.p50_ms, 'p99 ms': m.p99_ms, calls: m.n },
      { path: 'the same tool over the bus', 'p50 ms': b.p50_ms, 'p99 ms': b.p99_ms, calls: b.n },
      { path: 'durable INSERT (Postgres)', 'p50 ms': c.p50_ms, 'p99 ms': c.p99_ms, calls: c.n },
    ]),
  );
  console.log(
    `per-server endpoint overhead p50: ${serverOverhead} ms (goal: at most ${GOAL_P50_OVERHEAD_MS} ms) ${serverOverhead <= GOAL_P50_OVERHEAD_MS ? 'met' : 'NOT met'}`,
  );
  console.log(
    `  of which the mesh (bus over direct): ${ms(b.p50_ms - d.p50_ms)} ms, a durable commit among it: ${c.p50_ms} ms; the MCP endpoint (endpoint over bus): ${ms(m.p50_ms - b.p50_ms)} ms`,
  );
  await direct.close();
  await perServer.close();
  await stopChildren([tools]);
  await upstream.stop();
  await writeResult('mcp', {
    sdk: { p50_ms: s.p50_ms, p99_ms: s.p99_ms, mean_ms: s.mean_ms },
    facade: { p50_ms: f.p50_ms, p99_ms: f.p99_ms, mean_ms: f.mean_ms },
    overhead_p50_ms: overhead,
    goal_p50_overhead_ms: GOAL_P50_OVERHEAD_MS,
    goal_met: overhead <= GOAL_P50_OVERHEAD_MS,
    per_server: {
      direct: { p50_ms: d.p50_ms, p99_ms: d.p99_ms, mean_ms: d.mean_ms },
      endpoint: { p50_ms: m.p50_ms, p99_ms: m.p99_ms, mean_ms: m.mean_ms },
      bus: { p50_ms: b.p50_ms, p99_ms: b.p99_ms, mean_ms: b.mean_ms },
      durable_insert: { p50_ms: c.p50_ms, p99_ms: c.p99_ms },
      overhead_p50_ms: serverOverhead,
      mesh_overhead_p50_ms: ms(b.p50_ms - d.p50_ms),
      endpoint_overhead_p50_ms: ms(m.p50_ms - b.p50_ms),
      goal_met: serverOverhead <= GOAL_P50_OVERHEAD_MS,
    },
    calls_per_path: s.n,
    sdk_line: '@modelcontextprotocol/sdk 1.x, streamable HTTP, protocol 2025-11-25',
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    // The machine may be shared: its load says how far these figures are from a quiet one's.
    load_average_at_start: loadAtStart,
    load_average_at_end: (await import('node:os')).loadavg(),
    measured_at: new Date().toISOString(),
  });
  await client.close();
} finally {
  await mcp.close().catch(() => undefined);
  await stopChildren(children);
  await nc.close();
  await api.close();
}
