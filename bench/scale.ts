// `pnpm bench scale`: the same load against 1, 2 and 4 instances of the skills service (builtin.echo
// calls, 64 in flight) and of the agent worker (whole agent turns, 100 at once over 20 agents,
// with one skills service and one api), reporting throughput per instance count. On a machine
// with fewer cores than instances the figures show where the CPU, not the mesh, is the limit:
// the number of cores and the load average are recorded beside them.
import type { ChildProcess } from 'node:child_process';
import { chmod, mkdtemp, rm } from 'node:fs/promises';
import { cpus, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { freePort, startScriptedOpenAI } from '@toolmesh/testing';
import { agentWorld } from './agent-world.ts';
import { benchServers, drive, ROOT_DIR, spawnReady, stopChildren, writeResult } from './support.ts';
import { summarize, table } from './stats.ts';

const COUNTS = (process.env['BENCH_SCALE_INSTANCES'] ?? '1,2,4').split(',').map(Number);
const CALLS = Number(process.env['BENCH_SCALE_CALLS'] ?? 10_000);
const TURNS = Number(process.env['BENCH_SCALE_TURNS'] ?? 300);
const IN_FLIGHT = 64;
const TURNS_AT_ONCE = 100;
const AGENTS = 20;

const { nats, db } = await benchServers();
const scratch = await mkdtemp(join(tmpdir(), 'toolmesh-bench-scale-'));
await chmod(scratch, 0o711);
const model = await startScriptedOpenAI({
  fallback: (req) =>
    req.body.messages.some((m) => m.role === 'tool')
      ? { toolCalls: [{ name: 'submit_result', arguments: { result: { ok: true } } }] }
      : { toolCalls: [{ name: 'builtin__echo', arguments: { hello: 'bench' } }] },
});
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
const adminKey = 'tma_bench_admin_key_0123456789';
const apiPort = await freePort();
const env = {
  CG__NATS__URL: nats.url,
  CG__NATS__SUBJECT_ROOT: nats.root,
  CG__POSTGRES__URL: db.url,
  CG__LOG__LEVEL: 'info',
  CG__API__HOST: '127.0.0.1',
  CG__API__PORT: String(apiPort),
  CG__API__ADMIN_KEY: adminKey,
  CG__LLM__BASE_URL: model.url,
  CG__LLM__API_KEY: 'bench',
  CG__ARTIFACTS__ROOT: join(scratch, 'artifacts'),
  CG__SANDBOX__ROOT_DIR: join(scratch, 'sandboxes'),
  // Several instances on one machine: a health port each, chosen by the system.
  CG__TOOLS__HEALTH_PORT: '0',
};
const spawnN = async (n: number, entry: string, ready: string, i0 = 0) => {
  const out: ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    out.push(
      await spawnReady(
        [join(ROOT_DIR, entry)],
        { ...env, CG__SERVICE__INSTANCE_ID: `bench-${i0 + i}` },
        ready,
      ),
    );
  }
  return out;
};

type Row = { instances: number; per_s: number; p50_ms: number; p99_ms: number; load1: number };
const skillsRows: Row[] = [];
const agentRows: Row[] = [];
const always: ChildProcess[] = [];
try {
  // --- skills-service instances: builtin.echo calls ---
  const client = createClient({ nc, root: nats.root });
  for (const n of COUNTS) {
    const kids = await spawnN(n, 'services/skills/src/main.ts', 'tool service started');
    try {
      const scope = { project: 'bench', channel: `scale${n}` };
      const echo = async (i: number) => {
        const r = await client.callTool({ ...scope, tool: 'builtin.echo', arguments: { i } });
        if (r.status !== 'succeeded') throw new Error(`call ${i} ended ${r.status}`);
      };
      await drive(500, IN_FLIGHT, echo);
      const run = await drive(CALLS, IN_FLIGHT, echo);
      const s = summarize(run.latencies);
      skillsRows.push({
        instances: n,
        per_s: Math.round(CALLS / run.seconds),
        p50_ms: s.p50_ms,
        p99_ms: s.p99_ms,
        load1: Math.round(loadavg()[0]! * 10) / 10,
      });
    } finally {
      await stopChildren(kids);
    }
  }

  // --- agent-worker instances: whole turns, with one skills service and one api ---
  always.push(...(await spawnN(1, 'services/skills/src/main.ts', 'tool service started', 100)));
  always.push(...(await spawnN(1, 'services/api/src/main.ts', 'api listening', 200)));
  const { turn } = await agentWorld({
    nc,
    root: nats.root,
    base: `http://127.0.0.1:${apiPort}`,
    adminKey,
    agents: AGENTS,
  });
  for (const n of COUNTS) {
    const kids = await spawnN(n, 'services/agent-worker/src/main.ts', 'agent worker started', 300);
    try {
      await drive(20, 10, turn);
      const run = await drive(TURNS, TURNS_AT_ONCE, turn);
      const s = summarize(run.latencies);
      agentRows.push({
        instances: n,
        per_s: Math.round((TURNS / run.seconds) * 10) / 10,
        p50_ms: s.p50_ms,
        p99_ms: s.p99_ms,
        load1: Math.round(loadavg()[0]! * 10) / 10,
      });
    } finally {
      await stopChildren(kids);
    }
  }

  console.log(
    table([
      ...skillsRows.map((r) => ({ run: `skills x${r.instances}, echo calls`, ...cells(r) })),
      ...agentRows.map((r) => ({ run: `agent-worker x${r.instances}, turns`, ...cells(r) })),
    ]),
  );
  await writeResult('scale', {
    skills: { load: { calls: CALLS, in_flight: IN_FLIGHT }, runs: skillsRows },
    agent_worker: {
      load: { turns: TURNS, at_once: TURNS_AT_ONCE, agents: AGENTS },
      runs: agentRows,
    },
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  });
} finally {
  await stopChildren(always);
  await nc.close();
  await model.stop();
  await nats.cleanup();
  await db.cleanup();
  await rm(scratch, { recursive: true, force: true });
}

function cells(r: Row) {
  return { 'per s': r.per_s, 'p50 ms': r.p50_ms, 'p99 ms': r.p99_ms, 'load 1m': r.load1 };
}
