// `pnpm bench roundtrip`: builtin.echo calls through the whole mesh (JetStream in, lease, card
// in Postgres, result event out), sequentially and with 64 in flight, against the floor measured
// in the same run: a bare JetStream publish, consume and ack plus one Postgres insert.
// BENCH_AUTH=1 runs both on a nats-server with JWT authentication: the skills service as its own
// user, the calls through a project credential, the floor as the admin user
// (bench/results/roundtrip-auth.json).
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect, credsAuthenticator } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { streamPublisher } from '@toolmesh/stream-publish';
import { spawnReady, drive, ROOT_DIR, writeResult, stopChildren, benchServers } from './support.ts';
import { summarize, table } from './stats.ts';

const SEQUENTIAL = Number(process.env['BENCH_SEQUENTIAL'] ?? 2_000);
const CONCURRENT = Number(process.env['BENCH_CONCURRENT'] ?? 20_000);
const IN_FLIGHT = 64;
const WARMUP = 500;

const AUTH = process.env['BENCH_AUTH'] === '1';
const { nats, db, auth, durability } = await benchServers({ auth: AUTH });
const children: ChildProcess[] = [];
const adminCreds = auth ? await auth.creds('admin') : undefined;
const asAdmin = adminCreds
  ? { authenticator: credsAuthenticator(new TextEncoder().encode(adminCreds)) }
  : {};
const nc = await connect({ servers: nats.url, noAsyncTraces: true, ...asAdmin });
try {
  // --- the mesh ---
  const env = {
    CG__NATS__URL: nats.url,
    CG__NATS__SUBJECT_ROOT: nats.root,
    CG__POSTGRES__URL: db.url,
    CG__LOG__LEVEL: 'warn',
    ...(auth ? { CG__NATS__CREDS: await auth.creds('skills') } : {}),
    // Settings to try (CG__TOOLS__CONCURRENCY=128 ...) pass through to the skills service.
    ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CG__'))),
  };
  // BENCH_PROFILE=1 writes a CPU profile of the skills service to .tmp/profiles/.
  const profile = process.env['BENCH_PROFILE']
    ? ['--cpu-prof', `--cpu-prof-dir=${join(ROOT_DIR, '.tmp/profiles')}`]
    : [];
  children.push(
    await spawnReady(
      [...profile, join(ROOT_DIR, 'services/skills/src/main.ts')],
      { ...env, CG__LOG__LEVEL: 'info' },
      'tool service started',
    ),
  );
  const callerNc = auth
    ? await connect({ servers: nats.url, noAsyncTraces: true, ...(await auth.project('bench')) })
    : nc;
  const client = createClient({ nc: callerNc, root: nats.root });
  const scope = { project: 'bench', channel: 'roundtrip' };
  const echo = async (i: number) => {
    const r = await client.callTool({ ...scope, tool: 'builtin.echo', arguments: { i } });
    if (r.status !== 'succeeded') throw new Error(`call ${i} ended ${r.status}`);
  };
  await drive(WARMUP, 8, echo);
  const seq = await drive(SEQUENTIAL, 1, echo);
  const conc = await drive(CONCURRENT, IN_FLIGHT, echo);

  // --- the floor ---
  const floorStream = `${nats.root}_FLOOR`;
  const replyPrefix = `${nats.root}.floorreply`;
  const jsm = await jetstreamManager(nc);
  await jsm.streams.add({ name: floorStream, subjects: [`${nats.root}.floor.call.>`] });
  children.push(
    await spawnReady(
      [
        join(ROOT_DIR, 'bench/floor-worker.ts'),
        nats.url,
        db.url,
        floorStream,
        `${nats.root}.floor.call.>`,
        replyPrefix,
        String(IN_FLIGHT),
      ],
      adminCreds ? { BENCH_NATS_CREDS: adminCreds } : {},
      'ready',
    ),
  );
  const waiters = new Map<string, () => void>();
  nc.subscribe(`${replyPrefix}.>`, {
    callback: (_e, m) => waiters.get(m.subject.slice(m.subject.lastIndexOf('.') + 1))?.(),
  });
  await nc.flush();
  let fid = 0;
  const floorOp = async (i: number) => {
    const id = `f${fid++}`;
    const done = new Promise<void>((r) => waiters.set(id, r));
    // The same acknowledged publish the SDK makes (@toolmesh/stream-publish).
    await streamPublisher(nc).publish(`${nats.root}.floor.call.x`, JSON.stringify({ i }), {
      msgId: id,
    });
    await done;
    waiters.delete(id);
  };
  await drive(WARMUP, 8, floorOp);
  const floorSeq = await drive(SEQUENTIAL, 1, floorOp);
  const floorConc = await drive(CONCURRENT, IN_FLIGHT, floorOp);

  const s = summarize(seq.latencies);
  const c = summarize(conc.latencies);
  const fs = summarize(floorSeq.latencies);
  const fc = summarize(floorConc.latencies);
  const callsPerS = Math.round(CONCURRENT / conc.seconds);
  const floorPerS = Math.round(CONCURRENT / floorConc.seconds);
  const result = {
    p50_ms: s.p50_ms,
    p99_ms: s.p99_ms,
    calls_per_s: callsPerS,
    floor_p50_ms: fs.p50_ms,
    ratio_p50: Math.round((s.p50_ms / fs.p50_ms) * 100) / 100,
    concurrent: { in_flight: IN_FLIGHT, calls: CONCURRENT, p50_ms: c.p50_ms, p99_ms: c.p99_ms },
    floor: {
      p99_ms: fs.p99_ms,
      calls_per_s: floorPerS,
      concurrent_p50_ms: fc.p50_ms,
      concurrent_p99_ms: fc.p99_ms,
    },
    ratio_calls_per_s: Math.round((callsPerS / floorPerS) * 100) / 100,
    sequential_calls: SEQUENTIAL,
    nats_auth: AUTH,
    durability,
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    measured_at: new Date().toISOString(),
  };
  console.log(
    table([
      {
        run: 'mesh, sequential',
        'p50 ms': s.p50_ms,
        'p99 ms': s.p99_ms,
        'calls/s': Math.round(SEQUENTIAL / seq.seconds),
      },
      {
        run: 'floor, sequential',
        'p50 ms': fs.p50_ms,
        'p99 ms': fs.p99_ms,
        'calls/s': Math.round(SEQUENTIAL / floorSeq.seconds),
      },
      {
        run: `mesh, ${IN_FLIGHT} in flight`,
        'p50 ms': c.p50_ms,
        'p99 ms': c.p99_ms,
        'calls/s': callsPerS,
      },
      {
        run: `floor, ${IN_FLIGHT} in flight`,
        'p50 ms': fc.p50_ms,
        'p99 ms': fc.p99_ms,
        'calls/s': floorPerS,
      },
    ]),
  );
  console.log(
    `\nratio to floor: p50 ${result.ratio_p50}x sequential; throughput ${result.ratio_calls_per_s}x`,
  );
  await writeResult(AUTH ? 'roundtrip-auth' : 'roundtrip', result);
  if (callerNc !== nc) await callerNc.close();
} finally {
  await stopChildren(children);
  await nc.close();
  await nats.cleanup();
  await db.cleanup();
}
