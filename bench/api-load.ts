// `pnpm bench api`: HTTP load on a listening api with the skills service running as its own
// process: (a) a read route, GET /v1/projects/:p/tools, and (b) tool execution over HTTP,
// POST /v1/projects/:p/executions of builtin.echo waiting for each result (publish, tool service,
// card in Postgres, result event, answer). autocannon fires from a worker thread so that the
// load generator does not share the api's event loop.
import type { ChildProcess } from 'node:child_process';
import { createRequire } from 'node:module';
import { cpus } from 'node:os';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { startTestApi } from '../services/api/src/test/support.ts';
import { table } from './stats.ts';
import { spawnReady, ROOT_DIR, writeResult, stopChildren } from './support.ts';

const DURATION_SEC = Number(process.env['BENCH_DURATION_SEC'] ?? 10);
const CONNECTIONS = Number(process.env['BENCH_CONNECTIONS'] ?? 32);
const WARMUP_SEC = 2;

// autocannon ships no types; this is the part of its result the benchmark reads.
interface AutocannonResult {
  requests: { average: number; total: number };
  latency: { p50: number; p99: number; average: number };
  non2xx: number;
  errors: number;
  timeouts: number;
}
type Autocannon = (opts: Record<string, unknown>) => Promise<AutocannonResult>;
const autocannon = createRequire(import.meta.url)('autocannon') as Autocannon;

interface Load {
  url: string;
  method: 'GET' | 'POST';
  key: string;
  body?: unknown;
  expectStatus: number;
}

async function fire(load: Load, durationSec: number) {
  const r = await autocannon({
    url: load.url,
    method: load.method,
    connections: CONNECTIONS,
    duration: durationSec,
    workers: 1,
    headers: {
      authorization: `Bearer ${load.key}`,
      ...(load.body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(load.body !== undefined ? { body: JSON.stringify(load.body) } : {}),
  });
  if (r.non2xx > 0 || r.errors > 0 || r.timeouts > 0) {
    throw new Error(
      `${load.method} ${load.url}: ${r.non2xx} non-2xx, ${r.errors} errors, ${r.timeouts} timeouts`,
    );
  }
  return {
    requests_per_s: Math.round(r.requests.average),
    requests: r.requests.total,
    p50_ms: r.latency.p50,
    p99_ms: r.latency.p99,
    mean_ms: Math.round(r.latency.average * 100) / 100,
  };
}

// The per-key request limit stays on, far above the load, so its cost (one Postgres statement
// per request) is part of what is measured without refusing any request. Set
// CG__API__RATE_LIMIT_PER_MINUTE=0 to measure without it.
const limit = process.env['CG__API__RATE_LIMIT_PER_MINUTE'] ?? '100000000';
const api = await startTestApi({
  CG__LOG__LEVEL: 'warn',
  CG__API__RATE_LIMIT_PER_MINUTE: limit,
  CG__API__ADMIN_RATE_LIMIT_PER_MINUTE: limit,
});
const children: ChildProcess[] = [];
try {
  children.push(
    await spawnReady(
      [join(ROOT_DIR, 'services/skills/src/main.ts')],
      { ...api.env, CG__LOG__LEVEL: 'info' },
      'tool service started',
    ),
  );
  await api.app.listen({ host: '127.0.0.1', port: 0 });
  const { port } = api.app.server.address() as AddressInfo;
  const project = await api.createProject('bench');
  const base = `http://127.0.0.1:${port}/v1/projects/${project.id}`;

  const read: Load = { url: `${base}/tools`, method: 'GET', key: project.key, expectStatus: 200 };
  const execute: Load = {
    url: `${base}/executions`,
    method: 'POST',
    key: project.key,
    body: { tool: 'builtin.echo', arguments: { text: 'hello', n: 3 } },
    expectStatus: 200,
  };
  const check = await fetch(execute.url, {
    method: 'POST',
    headers: { authorization: `Bearer ${project.key}`, 'content-type': 'application/json' },
    body: JSON.stringify(execute.body),
  });
  if (check.status !== execute.expectStatus)
    throw new Error(`execute answered ${check.status}: ${await check.text()}`);

  const runs: Record<string, Awaited<ReturnType<typeof fire>>> = {};
  for (const [name, load] of [
    ['read', read],
    ['execute', execute],
  ] as const) {
    await fire(load, WARMUP_SEC);
    runs[name] = await fire(load, DURATION_SEC);
  }
  // Requests cut off when a run ended still have their calls in the mesh; let them land.
  for (let i = 0; i < 100 && (await api.store.executions.active(project.id, 1)).length > 0; i++) {
    await new Promise((r) => setTimeout(r, 100));
  }
  const { rows } = await api.store.pool.query<{ status: string; n: string }>(
    `SELECT status, count(*) AS n FROM state.tool_executions WHERE project_id = $1 GROUP BY status`,
    [project.id],
  );
  const byStatus = Object.fromEntries(rows.map((r) => [r.status, Number(r.n)]));

  const result = {
    read: { route: 'GET /v1/projects/:p/tools', ...runs['read'] },
    execute: {
      route: 'POST /v1/projects/:p/executions (builtin.echo, waiting)',
      ...runs['execute'],
    },
    executions_by_status: byStatus,
    connections: CONNECTIONS,
    duration_s: DURATION_SEC,
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  };
  console.log(
    table(
      (['read', 'execute'] as const).map((name) => ({
        run: `${result[name].route}`,
        'req/s': result[name].requests_per_s ?? 0,
        'p50 ms': result[name].p50_ms ?? 0,
        'p99 ms': result[name].p99_ms ?? 0,
      })),
    ),
  );
  console.log(
    `\n${CONNECTIONS} connections, ${DURATION_SEC} s each; executions by status: ${JSON.stringify(byStatus)}`,
  );
  await writeResult('api', result);
} finally {
  await stopChildren(children);
  await api.close();
}
