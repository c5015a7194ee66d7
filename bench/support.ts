// What the benchmarks share: a NATS subject root and a migrated database of their own, starting
// a service as a child process and waiting for its ready line, and driving operations with a
// fixed number in flight.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { pino } from 'pino';
import { createPool, migrate } from '@toolmesh/store';
import { randomBytes } from 'node:crypto';
import { connect, credsAuthenticator, type ConnectionOptions } from '@nats-io/transport-node';
import type { ServiceUser } from '@toolmesh/nats-auth';
import {
  projectStreamMaker,
  startLocalNats,
  startTestNatsServer,
  useNats,
  usePostgres,
  type LocalNats,
  type TestPostgres,
} from '@toolmesh/testing';

export const ROOT_DIR = join(import.meta.dirname, '..');

/** Users of an authenticated server (BENCH_AUTH=1): service creds and project credentials. */
export interface BenchAuth {
  creds(user: ServiceUser): Promise<string>;
  /** Connect options of a fresh credential of the project, as the api would issue it. */
  project(project: string): Promise<Pick<ConnectionOptions, 'authenticator' | 'inboxPrefix'>>;
}

/** A subject root on a NATS server of the bench's own. */
export interface BenchNats {
  url: string;
  root: string;
  /** Makes a project's command stream as the api does (the `bench` project's is made already). */
  provisionProject(project: string): Promise<void>;
  cleanup(): Promise<void>;
}

/** What the benches are measured on: every figure is for acknowledgements this durable. */
export interface BenchDurability {
  /** As the server reports them: `on` for each, as `pnpm stack` runs it. */
  postgres: { fsync: string; synchronous_commit: string; full_page_writes: string };
  /** When JetStream fsyncs a write: `always` (before acknowledging it), or its interval. */
  jetstream_sync: string;
}

/** A server's JetStream sync in the words of BenchDurability.jetstream_sync. */
export function jetStreamSync(nats: LocalNats): string {
  return nats.syncAlways
    ? 'always'
    : `every 2 min (nats-server ${nats.version} has no sync_interval)`;
}

/** A local nats-server in operator mode (JWT auth, as `pnpm stack` runs it) and a root in it. */
async function authNats(): Promise<{ nats: BenchNats; auth: BenchAuth; sync: string }> {
  const server = await startTestNatsServer({ syncAlways: true });
  const nats = await useNats({ server });
  const auth: BenchAuth = {
    creds: (user) => Promise.resolve(nats.creds(user)),
    project: async (project) => {
      const { creds, inboxPrefix } = await nats.projectCredential(project, project);
      return { authenticator: credsAuthenticator(new TextEncoder().encode(creds)), inboxPrefix };
    },
  };
  const cleanup = async () => {
    await nats.cleanup();
    await server.close();
  };
  return {
    nats: { url: nats.url, root: nats.root, provisionProject: nats.provisionProject, cleanup },
    auth,
    sync: jetStreamSync(server),
  };
}

/**
 * A root on a nats-server without authentication: NATS_URL (the durable one `pnpm bench`
 * starts), else one of its own. The bench's default, comparable with earlier figures.
 */
async function unauthenticatedNats(): Promise<BenchNats> {
  const root = `t${randomBytes(5).toString('hex')}`;
  const given = process.env['NATS_URL'];
  const server = given ? undefined : await startLocalNats();
  const url = given ?? server!.url;
  const nc = await connect({ servers: url });
  return {
    url,
    root,
    provisionProject: projectStreamMaker(nc, root),
    cleanup: async () => {
      await nc.close();
      await server?.close();
    },
  };
}

/**
 * A fresh subject root and a fresh, migrated database; each has its own `cleanup`. With
 * `auth`, the root is on a nats-server of its own with JWT authentication. The servers are
 * NATS_URL and DATABASE_URL, which `pnpm bench` points at durable ones it started; their
 * durability is printed and returned for the result file.
 */
export async function benchServers(opts: { auth?: boolean } = {}): Promise<{
  nats: BenchNats;
  db: TestPostgres;
  auth?: BenchAuth;
  durability: BenchDurability;
}> {
  const authed = opts.auth === true ? await authNats() : undefined;
  const nats = authed?.nats ?? (await unauthenticatedNats());
  // The project the benches call for has its command stream, as the api makes it.
  await nats.provisionProject('bench');
  const db = await usePostgres();
  const logger = pino({ level: 'warn' });
  const pool = createPool({
    url: db.url,
    max: 2,
    statementTimeoutMs: 30_000,
    connectTimeoutMs: 5_000,
    logger,
  });
  let settings;
  try {
    await migrate({ pool, logger });
    settings = await pool.query<{ name: string; setting: string }>(
      `SELECT name, setting FROM pg_settings
        WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes')`,
    );
  } finally {
    await pool.end();
  }
  const pg = Object.fromEntries(settings.rows.map((r) => [r.name, r.setting]));
  const durability: BenchDurability = {
    postgres: {
      fsync: pg['fsync'] ?? '?',
      synchronous_commit: pg['synchronous_commit'] ?? '?',
      full_page_writes: pg['full_page_writes'] ?? '?',
    },
    jetstream_sync:
      authed?.sync ?? process.env['BENCH_JETSTREAM_SYNC'] ?? 'unknown (a server not started here)',
  };
  console.log(
    `durability: Postgres ${Object.entries(durability.postgres)
      .map(([k, v]) => `${k}=${v}`)
      .join(' ')}; JetStream sync ${durability.jetstream_sync}`,
  );
  return { nats, db, ...(authed ? { auth: authed.auth } : {}), durability };
}

/**
 * Keeps the planner's statistics current while a bench runs, as autovacuum does in a deployment:
 * a bench measures a deployment in its steady state, not one whose plans were made against the
 * empty tables it started with and stay cached in every session until the statistics change. A
 * 30-second bench whose tables grow a hundredfold in a few seconds would otherwise measure
 * sequential scans that no running deployment makes. Every `everyMs` it analyzes the tables
 * autovacuum would (its default rule: more rows changed since the last analyze than 50 plus 10 %
 * of the table), not the whole database: that took about 0.3 s of a core per pass, 14 % of one
 * core over `pnpm bench agent`, and no deployment pays it. Returns a stop function; the ANALYZE
 * runs count in the measured CPU.
 */
export function keepAnalyzed(url: string, everyMs = 2_000): () => Promise<void> {
  const pool = createPool({
    url,
    max: 1,
    statementTimeoutMs: 60_000,
    connectTimeoutMs: 5_000,
    logger: pino({ level: 'warn' }),
  });
  const pass = async () => {
    const due = await pool.query<{ name: string }>(
      `SELECT format('%I.%I', s.schemaname, s.relname) AS name
         FROM pg_stat_user_tables s JOIN pg_class c ON c.oid = s.relid
        WHERE s.n_mod_since_analyze > 50 + 0.1 * greatest(c.reltuples, 0)`,
    );
    if (due.rows.length > 0) await pool.query(`ANALYZE ${due.rows.map((r) => r.name).join(', ')}`);
  };
  let running = pass();
  const timer = setInterval(() => {
    running = running.then(pass);
  }, everyMs);
  return async () => {
    clearInterval(timer);
    await running.catch(() => undefined);
    await pool.end();
  };
}

/** Spawns `node <args>` and resolves once its stdout shows `ready`; later output is dropped. */
export async function spawnReady(
  args: string[],
  env: Record<string, string>,
  ready: string,
): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, {
    cwd: ROOT_DIR,
    env: { PATH: process.env['PATH'] ?? '', ...env },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let out = '';
  const ready$ = Promise.withResolvers<void>();
  const onData = (b: Buffer) => {
    out = (out + b.toString()).slice(-8_192);
    if (out.includes(ready)) ready$.resolve();
  };
  child.stdout.on('data', onData);
  child.once('exit', (code) =>
    ready$.reject(new Error(`${args.join(' ')} exited ${code}: ${out}`)),
  );
  await ready$.promise;
  // Drained and dropped from here on: keeping it would cost CPU that belongs to the measurement.
  child.stdout.off('data', onData);
  child.stdout.resume();
  return child;
}

/** Runs `total` operations with `inFlight` at once; returns per-op latencies and wall time. */
export async function drive(total: number, inFlight: number, op: (i: number) => Promise<unknown>) {
  const latencies: number[] = new Array<number>(total);
  let next = 0;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) {
        const i = next++;
        const s = performance.now();
        await op(i);
        latencies[i] = performance.now() - s;
      }
    }),
  );
  return { latencies, seconds: (performance.now() - t0) / 1000 };
}

/**
 * `count` bursts of `size` operations started at once, each burst waited out before the next:
 * the latencies of all of them and the seconds the bursts took together.
 */
export async function bursts(count: number, size: number, op: (i: number) => Promise<unknown>) {
  const latencies: number[] = [];
  let seconds = 0;
  for (let b = 0; b < count; b++) {
    const burst = await drive(size, size, (i) => op(b * size + i));
    latencies.push(...burst.latencies);
    seconds += burst.seconds;
  }
  return { latencies, seconds };
}

/** Writes a benchmark's figures to bench/results/<name>.json and says so. */
export async function writeResult(name: string, result: unknown): Promise<void> {
  await mkdir(join(ROOT_DIR, 'bench/results'), { recursive: true });
  await writeFile(
    join(ROOT_DIR, `bench/results/${name}.json`),
    JSON.stringify(result, null, 2) + '\n',
  );
  console.log(`written to bench/results/${name}.json`);
}

/** Stops the children a benchmark started and waits for them to exit. */
export async function stopChildren(children: readonly ChildProcess[]): Promise<void> {
  for (const c of children) {
    if (c.exitCode !== null || c.signalCode !== null) continue;
    c.kill('SIGTERM');
    await once(c, 'exit');
  }
}
