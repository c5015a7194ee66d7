// `pnpm bench footprint`: what one call leaves behind, for capacity planning. Runs builtin.echo
// calls (a small argument, as most calls carry) and agent turns through the mesh, then reports
// the bytes per call in each place that grows: the Postgres tables (with their indexes and
// TOAST), both JetStream streams and the lease bucket. Written to bench/results/footprint.json.
import type { ChildProcess } from 'node:child_process';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { pino } from 'pino';
import { createClient } from '@toolmesh/client';
import { createNames } from '@toolmesh/protocol';
import { createPool } from '@toolmesh/store';
import { benchServers, drive, ROOT_DIR, spawnReady, stopChildren, writeResult } from './support.ts';
import { table } from './stats.ts';

const CALLS = Number(process.env['BENCH_FOOTPRINT_CALLS'] ?? 5_000);

const { nats, db } = await benchServers();
const children: ChildProcess[] = [];
const nc = await connect({ servers: nats.url, noAsyncTraces: true });
const pool = createPool({
  url: db.url,
  max: 2,
  statementTimeoutMs: 60_000,
  connectTimeoutMs: 5_000,
  logger: pino({ level: 'warn' }),
});
try {
  const env = {
    CG__NATS__URL: nats.url,
    CG__NATS__SUBJECT_ROOT: nats.root,
    CG__POSTGRES__URL: db.url,
    CG__LOG__LEVEL: 'info',
  };
  children.push(
    await spawnReady([join(ROOT_DIR, 'services/skills/src/main.ts')], env, 'tool service started'),
  );
  const client = createClient({ nc, root: nats.root });
  const sizes = async () => {
    const { rows } = await pool.query<{ name: string; bytes: string }>(
      `SELECT n.nspname || '.' || c.relname AS name, pg_total_relation_size(c.oid) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE c.relkind = 'r' AND n.nspname IN ('public', 'state')`,
    );
    return new Map(rows.map((r) => [r.name, Number(r.bytes)]));
  };
  const jsm = await jetstreamManager(nc);
  const names = createNames(nats.root);
  const streamBytes = async () => {
    const out = new Map<string, number>();
    const cmd = names.projectCommandStream('bench');
    for (const s of [cmd, names.eventStream, `KV_${names.leaseBucket}`]) {
      out.set(s, (await jsm.streams.info(s)).state.bytes);
    }
    return out;
  };
  const scope = { project: 'bench', channel: 'footprint' };
  const echo = async (i: number) => {
    const r = await client.callTool({
      ...scope,
      tool: 'builtin.echo',
      arguments: { i, text: 'a typical small argument of about sixty bytes' },
    });
    if (r.status !== 'succeeded') throw new Error(`call ${i} ended ${r.status}`);
  };
  await drive(100, 16, echo);
  await pool.query('VACUUM ANALYZE');
  const pgBefore = await sizes();
  const jsBefore = await streamBytes();
  await drive(CALLS, 64, echo);
  await pool.query('VACUUM ANALYZE');
  const pgAfter = await sizes();
  const jsAfter = await streamBytes();

  const rows: { place: string; 'bytes per call': number }[] = [];
  for (const [name, after] of pgAfter) {
    const grew = after - (pgBefore.get(name) ?? 0);
    if (grew > 0)
      rows.push({ place: `postgres ${name}`, 'bytes per call': Math.round(grew / CALLS) });
  }
  for (const [name, after] of jsAfter) {
    const grew = after - (jsBefore.get(name) ?? 0);
    rows.push({ place: `jetstream ${name}`, 'bytes per call': Math.round(grew / CALLS) });
  }
  rows.sort((a, b) => b['bytes per call'] - a['bytes per call']);
  const pgTotal = rows
    .filter((r) => r.place.startsWith('postgres'))
    .reduce((a, r) => a + r['bytes per call'], 0);
  const jsTotal = rows
    .filter((r) => r.place.startsWith('jetstream'))
    .reduce((a, r) => a + r['bytes per call'], 0);
  console.log(table(rows));
  console.log(`\nper call: Postgres ${pgTotal} bytes, JetStream ${jsTotal} bytes (${CALLS} calls)`);
  await writeResult('footprint', {
    calls: CALLS,
    postgres_bytes_per_call: pgTotal,
    jetstream_bytes_per_call: jsTotal,
    places: rows,
    node: process.version,
    cpus: cpus().length,
    measured_at: new Date().toISOString(),
  });
} finally {
  await stopChildren(children);
  await pool.end();
  await nc.close();
  await nats.cleanup();
  await db.cleanup();
}
