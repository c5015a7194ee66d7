// `pnpm bench tools`: an HTTP tool of the registry called through the whole mesh (JetStream in,
// registry lookup, argument check, lease, the request to a local upstream, card in Postgres,
// result event out), against a bare HTTP request to the same local upstream, in the same run.
// The same pair for the MCP kind: a tool of an MCP server (streamable HTTP, the official SDK's
// McpServer in this process) through the mesh, against a bare SDK client call (packages/mcp)
// to the same server. The goal is at most 2 ms of mesh overhead at p50 over the bare call.
import type { ChildProcess } from 'node:child_process';
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { request, Agent } from 'undici';
import { createClient } from '@toolmesh/client';
import { connectMcp } from '@toolmesh/mcp';
import { SYSTEM_CHANNEL, decodeMessage, encodeMessage } from '@toolmesh/protocol';
import { startMcpHttpServer } from '@toolmesh/testing';
import { createPool, createStore, ToolOrigin } from '@toolmesh/store';
import { benchServers, drive, ROOT_DIR, spawnReady, stopChildren, writeResult } from './support.ts';
import { summarize, table } from './stats.ts';

const CALLS = Number(process.env['BENCH_CALLS'] ?? 2_000);
const WARMUP = 300;

const upstream = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    res.writeHead(200, { 'content-type': 'application/json' });
    res.end(`{"ok":true,"path":${JSON.stringify(req.url)}}`);
  });
});
upstream.listen(0, '127.0.0.1');
await new Promise<void>((r) => upstream.once('listening', () => r()));
const upstreamUrl = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;

const mcpServer = await startMcpHttpServer({ tools: ['echo'], announce: false });

const { nats, db } = await benchServers();
const children: ChildProcess[] = [];
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
const logger = pino({ level: 'warn' });
const pool = createPool({
  url: db.url,
  max: 2,
  statementTimeoutMs: 30_000,
  connectTimeoutMs: 5_000,
  logger,
});
const store = createStore(pool);
try {
  const project = 'bench';
  await store.projects.create(project, 'bench');
  await store.tools.create(project, {
    name: 'bench.get',
    target: 'bench',
    description: 'a GET to the local upstream',
    category: 'general',
    parameters: {
      type: 'object',
      properties: { id: { type: 'integer' } },
      required: ['id'],
    },
    origin: ToolOrigin.http,
    spec: { method: 'GET', url: `${upstreamUrl}/items/{id}` },
  });
  children.push(
    await spawnReady(
      [join(ROOT_DIR, 'services/tools/src/main.ts')],
      {
        CG__NATS__URL: nats.url,
        CG__NATS__SUBJECT_ROOT: nats.root,
        CG__POSTGRES__URL: db.url,
        CG__LOG__LEVEL: 'info',
        CG__TOOLS__HEALTH_PORT: '0',
        CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
      },
      'tools service started',
    ),
  );
  const client = createClient({ nc, root: nats.root });
  const mesh = async (i: number) => {
    const r = await client.callTool({
      project,
      channel: 'bench',
      tool: 'bench.get',
      arguments: { id: i },
    });
    if (r.status !== 'succeeded')
      throw new Error(`call ${i} ended ${r.status}: ${JSON.stringify(r.content)}`);
  };
  // The bare call: the same request with a kept-alive connection, as the service makes it.
  const agent = new Agent({ keepAliveTimeout: 10_000 });
  const bare = async (i: number) => {
    const res = await request(`${upstreamUrl}/items/${i}`, { dispatcher: agent });
    await res.body.json();
  };
  await drive(WARMUP, 4, mesh);
  await drive(WARMUP, 4, bare);
  const m = summarize((await drive(CALLS, 1, mesh)).latencies);
  const b = summarize((await drive(CALLS, 1, bare)).latencies);
  await agent.close();
  const overhead = Math.round((m.p50_ms - b.p50_ms) * 1000) / 1000;

  // MCP: the server registered and discovered the way the api does it (a refresh request).
  await store.mcpServers.create(project, { name: 'bmcp', transport: 'http', url: mcpServer.url });
  const refreshed = decodeMessage(
    'mcp_refresh_reply',
    (
      await nc.request(
        client.subjects.mcpRefresh({ project, channel: SYSTEM_CHANNEL, server: 'bmcp' }),
        encodeMessage('mcp_refresh', { v: 1 }),
        { timeout: 30_000 },
      )
    ).data,
  );
  if (!refreshed.ok) throw new Error(`MCP discovery failed: ${JSON.stringify(refreshed.error)}`);
  const mcpMesh = async (i: number) => {
    const r = await client.callTool({
      project,
      channel: 'bench',
      tool: 'bmcp.echo',
      arguments: { text: `n${i}` },
    });
    if (r.status !== 'succeeded')
      throw new Error(`MCP call ${i} ended ${r.status}: ${JSON.stringify(r.content)}`);
  };
  const sdk = await connectMcp({ transport: 'http', url: mcpServer.url });
  const mcpBare = async (i: number) => {
    await sdk.callTool('echo', { text: `n${i}` });
  };
  await drive(WARMUP, 4, mcpMesh);
  await drive(WARMUP, 4, mcpBare);
  const mm = summarize((await drive(CALLS, 1, mcpMesh)).latencies);
  const mb = summarize((await drive(CALLS, 1, mcpBare)).latencies);
  await sdk.close();
  const mcpOverhead = Math.round((mm.p50_ms - mb.p50_ms) * 1000) / 1000;
  const result = {
    http: {
      mesh_p50_ms: m.p50_ms,
      mesh_p99_ms: m.p99_ms,
      bare_p50_ms: b.p50_ms,
      bare_p99_ms: b.p99_ms,
      overhead_p50_ms: overhead,
      ratio_p50: Math.round((m.p50_ms / b.p50_ms) * 100) / 100,
      goal_overhead_p50_ms: 2,
      calls: CALLS,
    },
    mcp: {
      mesh_p50_ms: mm.p50_ms,
      mesh_p99_ms: mm.p99_ms,
      bare_p50_ms: mb.p50_ms,
      bare_p99_ms: mb.p99_ms,
      overhead_p50_ms: mcpOverhead,
      ratio_p50: Math.round((mm.p50_ms / mb.p50_ms) * 100) / 100,
      goal_overhead_p50_ms: 2,
      calls: CALLS,
    },
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    measured_at: new Date().toISOString(),
  };
  console.log(
    table([
      { run: 'http tool through the mesh', 'p50 ms': m.p50_ms, 'p99 ms': m.p99_ms },
      { run: 'bare http request', 'p50 ms': b.p50_ms, 'p99 ms': b.p99_ms },
      { run: 'mcp tool through the mesh', 'p50 ms': mm.p50_ms, 'p99 ms': mm.p99_ms },
      { run: 'bare MCP SDK call', 'p50 ms': mb.p50_ms, 'p99 ms': mb.p99_ms },
    ]),
  );
  console.log(
    `\nhttp: mesh overhead at p50 ${overhead} ms (${result.http.ratio_p50}x the bare call)`,
  );
  console.log(
    `mcp: mesh overhead at p50 ${mcpOverhead} ms (${result.mcp.ratio_p50}x the bare call)`,
  );
  await writeResult('tools', result);
} finally {
  await stopChildren(children);
  await store.close();
  await nc.close();
  await nats.cleanup();
  await db.cleanup();
  upstream.close();
  await mcpServer.stop();
}
