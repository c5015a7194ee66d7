// `pnpm bench neighbours`: one project floods the mesh while another makes one call at a time.
// Project B's builtin.echo round trip (SDK publish to result event) is measured alone, then while
// project A's FLOOD calls (published as fast as the bus takes them) are being worked off by the
// same skills service. Each project has its own command stream and the service hands its slots
// out round robin between projects (@toolmesh/bus consumeProjects), so B's call waits for one
// slot, not for A's backlog. Prints both p50s and their ratio, and fails past MAX_RATIO.
// On a nats-server with JWT authentication: the service as its own user, each project through
// a bus credential of its own, as deployed.
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { connect } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { benchServers, drive, ROOT_DIR, spawnReady, stopChildren, writeResult } from './support.ts';
import { summarize, table } from './stats.ts';

const FLOOD = Number(process.env['BENCH_FLOOD'] ?? 20_000);
const ALONE = Number(process.env['BENCH_ALONE'] ?? 300);
const WARMUP = 200;
const MAX_RATIO = 2;

const { nats, db, auth, durability } = await benchServers({ auth: true });
if (!auth) throw new Error('neighbours runs on an authenticated server');
const children: ChildProcess[] = [];
try {
  for (const p of ['flooder', 'neighbour']) await nats.provisionProject(p);
  children.push(
    await spawnReady(
      [join(ROOT_DIR, 'services/skills/src/main.ts')],
      {
        CG__NATS__URL: nats.url,
        CG__NATS__SUBJECT_ROOT: nats.root,
        CG__NATS__CREDS: await auth.creds('skills'),
        CG__POSTGRES__URL: db.url,
        CG__LOG__LEVEL: 'info',
        ...Object.fromEntries(Object.entries(process.env).filter(([k]) => k.startsWith('CG__'))),
      },
      'tool service started',
    ),
  );
  const tenant = async (project: string) => {
    const nc = await connect({
      servers: nats.url,
      noAsyncTraces: true,
      ...(await auth.project(project)),
    });
    return { nc, client: createClient({ nc, root: nats.root }) };
  };
  const a = await tenant('flooder');
  const b = await tenant('neighbour');
  const echoB = async (i: number) => {
    const r = await b.client.callTool({
      project: 'neighbour',
      channel: 'main',
      tool: 'builtin.echo',
      arguments: { i },
    });
    if (r.status !== 'succeeded') throw new Error(`B's call ${i} ended ${r.status}`);
  };
  await drive(WARMUP, 4, echoB);
  const alone = await drive(ALONE, 1, echoB);

  // A's flood: every call published (acknowledged by A's stream) as fast as it goes, then
  // worked off; B calls one at a time until A's last result is in.
  let aDone = 0;
  const aResults: Promise<unknown>[] = [];
  const floodStart = performance.now();
  let floodPublished = 0;
  const publishing = (async () => {
    for (let i = 0; i < FLOOD; i += 500) {
      const batch = Array.from({ length: Math.min(500, FLOOD - i) }, (_, k) =>
        a.client
          .callTool(
            { project: 'flooder', channel: 'main', tool: 'builtin.echo', arguments: { k } },
            { waitMs: 600_000 },
          )
          .then(() => aDone++),
      );
      aResults.push(...batch);
      floodPublished += batch.length;
      // Let the publishes of this batch out before queueing the next.
      await new Promise((r) => setImmediate(r));
    }
  })();
  // B starts once A's backlog is there.
  while (floodPublished < Math.min(FLOOD, 2_000)) await new Promise((r) => setTimeout(r, 5));
  const during: number[] = [];
  const backlogSeen: number[] = [];
  while (aDone < FLOOD * 0.9) {
    const s = performance.now();
    await echoB(during.length);
    during.push(performance.now() - s);
    backlogSeen.push(floodPublished - aDone);
  }
  await publishing;
  await Promise.all(aResults);
  const floodSeconds = (performance.now() - floodStart) / 1000;

  const quiet = summarize(alone.latencies);
  const loaded = summarize(during);
  const ratio = Math.round((loaded.p50_ms / quiet.p50_ms) * 100) / 100;
  const medianBacklog = [...backlogSeen].sort((x, y) => x - y)[Math.floor(backlogSeen.length / 2)];
  console.log(
    table([
      { run: 'B alone', calls: quiet.n, 'p50 ms': quiet.p50_ms, 'p99 ms': quiet.p99_ms },
      {
        run: `B during A's flood of ${FLOOD}`,
        calls: loaded.n,
        'p50 ms': loaded.p50_ms,
        'p99 ms': loaded.p99_ms,
      },
    ]),
  );
  console.log(
    `\nA's flood: ${FLOOD} calls worked off in ${floodSeconds.toFixed(1)} s (${Math.round(FLOOD / floodSeconds)} calls/s); A's calls unanswered while B called: median ${medianBacklog}`,
  );
  console.log(`B's p50 during the flood / alone: ${ratio}x (floor: ${MAX_RATIO}x)`);
  await writeResult('neighbours', {
    alone_p50_ms: quiet.p50_ms,
    alone_p99_ms: quiet.p99_ms,
    during_p50_ms: loaded.p50_ms,
    during_p99_ms: loaded.p99_ms,
    during_calls: loaded.n,
    ratio_p50: ratio,
    max_ratio: MAX_RATIO,
    flood_calls: FLOOD,
    flood_calls_per_s: Math.round(FLOOD / floodSeconds),
    flood_backlog_median: medianBacklog,
    durability,
    node: process.version,
    cpus: (await import('node:os')).cpus().length,
    measured_at: new Date().toISOString(),
  });
  await a.client.close();
  await b.client.close();
  await a.nc.close();
  await b.nc.close();
  if (ratio > MAX_RATIO) {
    console.error(`B's p50 rose ${ratio}x under A's flood: past the ${MAX_RATIO}x floor`);
    process.exitCode = 1;
  }
} finally {
  await stopChildren(children);
  await nats.cleanup();
  await db.cleanup();
}
