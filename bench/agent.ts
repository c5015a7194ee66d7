// `pnpm bench agent`: whole agent turns through the mesh: a task started over the api, the
// worker asks a scripted model, which calls builtin.echo; the skills service answers; the worker
// resumes, asks the model again, which calls submit_result; the task event arrives. One at a
// time and in bursts of 100 at once (100 agents: 100 independent turns), against two figures
// measured in the same run on the same servers: the floor, the same work without the worker (the
// worker's two requests to the scripted model, replayed, and one builtin.echo call through the
// SDK); and a peer, the same turn as a DBOS durable workflow (bench/agent-dbos.ts: each model
// call and the tool call a DBOS step, on the same Postgres server and model server). CPU per
// turn is measured per process over the measured bursts.
import type { ChildProcess } from 'node:child_process';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { chmod, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { freePort, startScriptedOpenAI, usePostgres } from '@toolmesh/testing';
import { createPool } from '@toolmesh/store';
import { pino } from 'pino';
import { agentWorld } from './agent-world.ts';
import {
  bursts,
  drive,
  keepAnalyzed,
  ROOT_DIR,
  spawnReady,
  stopChildren,
  writeResult,
  benchServers,
} from './support.ts';
import { summarize, table } from './stats.ts';
import {
  cpuMeter,
  databaseCpuSeconds,
  natsServerPid,
  postmasterPid,
  processCpuSeconds,
  treeCpuSeconds,
} from './cpu.ts';
import { createTimeline, type Timeline } from './timeline.ts';

const DBOS_VERSION = (
  JSON.parse(
    await readFile(join(ROOT_DIR, 'node_modules/@dbos-inc/dbos-sdk/package.json'), 'utf8'),
  ) as { version: string }
).version;
const SEQUENTIAL = Number(process.env['BENCH_SEQUENTIAL'] ?? 100);
const CONCURRENT = Number(process.env['BENCH_CONCURRENT'] ?? 100);
/** Bursts of CONCURRENT measured, after one that is not (see below). */
const BURSTS = Number(process.env['BENCH_BURSTS'] ?? 5);
const WARMUP = 10;
/** An agent runs its turns one after another: one agent per turn of a burst makes them independent. */
const AGENTS = Number(process.env['BENCH_AGENTS'] ?? CONCURRENT);
/** BENCH_TIMELINE=1: after the measured turns, this many more with their hops timed (timeline.ts). */
const TIMELINE_TURNS = process.env['BENCH_TIMELINE'] ? SEQUENTIAL : 0;

const { nats, db, durability } = await benchServers();
const scratch = await mkdtemp(join(tmpdir(), 'toolmesh-bench-agent-'));
// mkdtemp makes it 0700; as root, sandboxed commands run as sandbox.uid, which must pass through.
await chmod(scratch, 0o711);
let timeline: Timeline | undefined;
const model = await startScriptedOpenAI({
  fallback: (req) => {
    timeline?.mark('model request arrives');
    return req.body.messages.some((m) => m.role === 'tool')
      ? { toolCalls: [{ name: 'submit_result', arguments: { result: { ok: true } } }] }
      : { toolCalls: [{ name: 'builtin__echo', arguments: { hello: 'bench' } }] };
  },
});
const children: ChildProcess[] = [];
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
try {
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
    // Settings to try (CG__AGENT__CONCURRENCY=32 ...) pass through to every service.
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CG__'))),
  };
  // BENCH_PROFILE=1 writes CPU profiles of the services to .tmp/profiles/.
  const profile = process.env['BENCH_PROFILE']
    ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT_DIR, '.tmp/profiles')}`]
    : [];
  const start = async (entry: string, ready: string) => {
    const c = await spawnReady([...profile, join(ROOT_DIR, entry)], env, ready);
    children.push(c);
    return c.pid!;
  };
  const skillsPid = await start('services/skills/src/main.ts', 'tool service started');
  const workerPid = await start('services/agent-worker/src/main.ts', 'agent worker started');
  const apiPid = await start('services/api/src/main.ts', 'api listening');
  const postmaster = await pgPostmaster(db.url);
  const natsPid = await natsServerPid(nats.url);
  const meter = cpuMeter({
    api: () => processCpuSeconds(apiPid),
    'agent-worker': () => processCpuSeconds(workerPid),
    skills: () => processCpuSeconds(skillsPid),
    ...(natsPid === undefined ? {} : { 'nats-server': () => processCpuSeconds(natsPid) }),
    ...(postmaster === undefined
      ? {}
      : { postgres: () => databaseCpuSeconds(postmaster, db.database) }),
    'bench (driver)': () => processCpuSeconds(process.pid),
  });
  // The whole server too, every database on it (what earlier stops reported as Postgres's).
  const serverMeter = cpuMeter(
    postmaster === undefined ? {} : { server: () => treeCpuSeconds(postmaster) },
  );

  const { turn } = await agentWorld({
    nc,
    root: nats.root,
    base: `http://127.0.0.1:${apiPort}`,
    adminKey,
    agents: AGENTS,
  });
  const stopAnalyzing = keepAnalyzed(db.url);
  await drive(WARMUP, 1, turn);
  const seq = await drive(SEQUENTIAL, 1, turn);
  // The first burst is a warm-up, for the floor below too (measured: it ran at about two thirds
  // of the throughput of the next ones, for the floor as for the mesh): among other things the
  // Postgres pools grow from the one or two connections the sequential turns used, and each new
  // connection's backend loads its catalog caches and compiles the plpgsql functions it calls.
  // Then BURSTS bursts are measured.
  await drive(CONCURRENT, CONCURRENT, turn);
  const [cpu, serverCpu] = await Promise.all([meter.start(), serverMeter.start()]);
  const conc = await bursts(BURSTS, CONCURRENT, turn);
  const cpuPerTurn = await cpu.msPer(BURSTS * CONCURRENT);
  const serverCpuPerTurn = (await serverCpu.msPer(BURSTS * CONCURRENT))['server'];
  if (TIMELINE_TURNS > 0) {
    const t = createTimeline(nc, nats.root);
    timeline = t;
    await nc.flush();
    for (let i = 0; i < TIMELINE_TURNS; i++) await t.record(() => turn(i));
    timeline = undefined;
    console.log(`where one turn's time goes (median of ${TIMELINE_TURNS} turns, one at a time):`);
    console.log(`${t.print()}\n`);
  }

  // --- the floor: the same model requests and tool call, with nobody orchestrating ---
  // The requests are the worker's own, as the model server received them in the last turns
  // (system prompt, tool specs, the call and its result; streamed), and their answers are read
  // to the end. Earlier stops measured against a short, unstreamed request instead; that floor
  // is still measured (`short_floor_*`) so figures compare across stops.
  const sent = model.requests();
  const lastOf = (second: boolean) =>
    sent.findLast((r) => r.body.messages.some((m) => m.role === 'tool') === second)?.body;
  const [first, second] = [lastOf(false), lastOf(true)];
  if (!first || !second) throw new Error('the model server saw no complete turn to replay');
  const short = { model: 'm', messages: [{ role: 'user', content: 'echo' }] };
  const client = createClient({ nc, root: nats.root });
  const ask = async (body: unknown) => {
    const res = await fetch(`${model.url}/chat/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', authorization: 'Bearer bench' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`model answered ${res.status}`);
    if (!(body as { stream?: boolean }).stream) return void (await res.json());
    // Each event of the stream parsed, as any client must to see the calls.
    for (const line of (await res.text()).split('\n'))
      if (line.startsWith('data: ') && line !== 'data: [DONE]') JSON.parse(line.slice(6));
  };
  const floorOf = (bodies: [unknown, unknown]) => async () => {
    await ask(bodies[0]);
    const r = await client.callTool({
      project: 'bench',
      channel: 'floor',
      tool: 'builtin.echo',
      arguments: { hello: 'bench' },
    });
    if (r.status !== 'succeeded') throw new Error(`echo ended ${r.status}`);
    await ask(bodies[1]);
  };
  const floorRuns = async (op: () => Promise<void>) => {
    await drive(WARMUP, 1, op);
    const sequential = await drive(SEQUENTIAL, 1, op);
    await drive(CONCURRENT, CONCURRENT, op);
    return { sequential, concurrent: await bursts(BURSTS, CONCURRENT, op) };
  };
  const floor = await floorRuns(floorOf([first, second]));
  const shortFloor = await floorRuns(floorOf([short, short]));
  await stopAnalyzing();

  // --- the peer: the same turn as a DBOS workflow, in a database of its own on the same server ---
  const firstFile = join(scratch, 'first-request.json');
  await writeFile(firstFile, JSON.stringify(first));
  const dbosDb = await usePostgres();
  let peer: DbosFigures;
  try {
    peer = await runDbosPeer({
      DBOS_SYSTEM_DATABASE_URL: dbosDb.url,
      BENCH_MODEL_URL: model.url,
      BENCH_FIRST_REQUEST: firstFile,
      BENCH_SEQUENTIAL: String(SEQUENTIAL),
      BENCH_CONCURRENT: String(CONCURRENT),
      BENCH_BURSTS: String(BURSTS),
      BENCH_POSTMASTER_PID: String(postmaster ?? 0),
      BENCH_POSTGRES_DATABASE: dbosDb.database,
    });
  } finally {
    await dbosDb.cleanup();
  }

  const s = summarize(seq.latencies);
  const c = summarize(conc.latencies);
  const fs = summarize(floor.sequential.latencies);
  const fc = summarize(floor.concurrent.latencies);
  const ss = summarize(shortFloor.sequential.latencies);
  const ratio = (a: number, b: number) => Math.round((a / b) * 100) / 100;
  const perS = (seconds: number) => Math.round(((BURSTS * CONCURRENT) / seconds) * 10) / 10;
  const turnsPerS = perS(conc.seconds);
  const floorPerS = perS(floor.concurrent.seconds);
  const shortPerS = perS(shortFloor.concurrent.seconds);
  const result = {
    turn_p50_ms: s.p50_ms,
    turn_p99_ms: s.p99_ms,
    floor_p50_ms: fs.p50_ms,
    ratio_p50: ratio(s.p50_ms, fs.p50_ms),
    concurrent: CONCURRENT,
    bursts: BURSTS,
    agents: AGENTS,
    turns_per_s: turnsPerS,
    floor_per_s: floorPerS,
    ratio_throughput: ratio(turnsPerS, floorPerS),
    concurrent_p50_ms: c.p50_ms,
    floor_concurrent_p50_ms: fc.p50_ms,
    short_floor_p50_ms: ss.p50_ms,
    short_floor_per_s: shortPerS,
    short_ratio_p50: ratio(s.p50_ms, ss.p50_ms),
    short_ratio_throughput: ratio(turnsPerS, shortPerS),
    cpu_ms_per_turn: cpuPerTurn,
    postgres_server_cpu_ms_per_turn: serverCpuPerTurn,
    dbos_p50_ms: peer.p50_ms,
    dbos_p99_ms: peer.p99_ms,
    dbos_per_s: peer.per_s,
    dbos_concurrent_p50_ms: peer.concurrent_p50_ms,
    dbos_cpu_ms_per_turn: peer.cpu_ms_per_turn,
    dbos_postgres_server_cpu_ms_per_turn: peer.postgres_server_cpu_ms_per_turn,
    ratio_p50_to_dbos: ratio(s.p50_ms, peer.p50_ms),
    ratio_throughput_to_dbos: ratio(turnsPerS, peer.per_s),
    dbos_sdk: DBOS_VERSION,
    durability,
    turns: SEQUENTIAL,
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  };
  console.log(
    table([
      { run: 'agent turn, one at a time', 'p50 ms': s.p50_ms, 'p99 ms': s.p99_ms, 'per s': '' },
      { run: 'floor, one at a time', 'p50 ms': fs.p50_ms, 'p99 ms': fs.p99_ms, 'per s': '' },
      { run: 'short floor, one at a time', 'p50 ms': ss.p50_ms, 'p99 ms': ss.p99_ms, 'per s': '' },
      {
        run: 'DBOS loop, one at a time',
        'p50 ms': peer.p50_ms,
        'p99 ms': peer.p99_ms,
        'per s': '',
      },
      {
        run: `agent turns, ${CONCURRENT} at once (x${BURSTS})`,
        'p50 ms': c.p50_ms,
        'p99 ms': c.p99_ms,
        'per s': turnsPerS,
      },
      {
        run: `DBOS loop, ${CONCURRENT} at once (x${BURSTS})`,
        'p50 ms': peer.concurrent_p50_ms,
        'p99 ms': peer.concurrent_p99_ms,
        'per s': peer.per_s,
      },
      {
        run: `floor, ${CONCURRENT} at once (x${BURSTS})`,
        'p50 ms': fc.p50_ms,
        'p99 ms': fc.p99_ms,
        'per s': floorPerS,
      },
      {
        run: `short floor, ${CONCURRENT} at once (x${BURSTS})`,
        'p50 ms': summarize(shortFloor.concurrent.latencies).p50_ms,
        'p99 ms': summarize(shortFloor.concurrent.latencies).p99_ms,
        'per s': shortPerS,
      },
    ]),
  );
  console.log(
    `\nratio to floor: p50 ${result.ratio_p50}x one at a time; throughput ${result.ratio_throughput}x` +
      ` (to the short floor: ${result.short_ratio_p50}x; ${result.short_ratio_throughput}x)`,
  );
  console.log(
    `to the DBOS loop: p50 ${result.ratio_p50_to_dbos}x one at a time (goal: at most 1);` +
      ` throughput ${result.ratio_throughput_to_dbos}x (goal: at least 1.5)`,
  );
  console.log(`CPU ms per turn, ${CONCURRENT} at once, toolmesh: ${fmtCpu(cpuPerTurn)}`);
  console.log(`CPU ms per turn, ${CONCURRENT} at once, DBOS:     ${fmtCpu(peer.cpu_ms_per_turn)}`);
  console.log(
    `the Postgres server as a whole (every database on it) per turn: toolmesh ${serverCpuPerTurn}, DBOS ${peer.postgres_server_cpu_ms_per_turn}`,
  );
  await writeResult('agent', result);
} finally {
  await stopChildren(children);
  await nc.close();
  await model.stop();
  await nats.cleanup();
  await db.cleanup();
  await rm(scratch, { recursive: true, force: true });
}

interface DbosFigures {
  p50_ms: number;
  p99_ms: number;
  concurrent_p50_ms: number;
  concurrent_p99_ms: number;
  per_s: number;
  cpu_ms_per_turn: Record<string, number>;
  postgres_server_cpu_ms_per_turn: number | undefined;
}

/** Runs bench/agent-dbos.ts and returns the figures it prints. */
async function runDbosPeer(env: Record<string, string>): Promise<DbosFigures> {
  const child = spawn(process.execPath, [join(ROOT_DIR, 'bench/agent-dbos.ts')], {
    cwd: ROOT_DIR,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-65_536)));
  const [code] = (await once(child, 'exit')) as [number | null];
  const line = out.split('\n').find((l) => l.startsWith('result '));
  if (code !== 0 || line === undefined) throw new Error(`the DBOS peer exited ${code}: ${out}`);
  return JSON.parse(line.slice('result '.length)) as DbosFigures;
}

async function pgPostmaster(url: string): Promise<number | undefined> {
  const pool = createPool({
    url,
    max: 1,
    statementTimeoutMs: 5_000,
    connectTimeoutMs: 5_000,
    logger: pino({ level: 'warn' }),
  });
  try {
    return await postmasterPid(pool);
  } finally {
    await pool.end();
  }
}

function fmtCpu(c: Record<string, number>): string {
  return Object.entries(c)
    .map(([k, v]) => `${k} ${v}`)
    .join(', ');
}
