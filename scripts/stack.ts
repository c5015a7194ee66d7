// `pnpm stack`: the whole mesh on this machine, without Docker. It uses NATS_URL / DATABASE_URL
// when given; otherwise it starts nats-server and a Postgres from the local binaries under
// .data/ (kept between runs). Then it migrates, starts each service as its own process with its
// log lines prefixed (with a scripted model for the agent worker when no LLM key is set), runs
// the demo (an agent task drawing a picture), and keeps running until Ctrl-C, which stops them all.
//   --once     stop after the demo (exit code 0 when the demo succeeded)
//   --cluster  run NATS as a three-node cluster on loopback ports, streams at replicas 3
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { ConfigError, loadConfig } from '@toolmesh/config';
import { createPool, ensureDatabase, migrate } from '@toolmesh/store';
import {
  demoModelReply,
  startLocalNats,
  startLocalPostgres,
  startNatsCluster,
  startScriptedOpenAI,
  type LocalNats,
} from '@toolmesh/testing';
import { runDemo, type DemoTarget } from './demo.ts';
import { ensureNatsAuth, type NatsAuthFiles } from './nats-auth.ts';

const ROOT = join(import.meta.dirname, '..');
const DATA = join(ROOT, '.data');
const SERVICES = [
  { name: 'skills', entry: 'services/skills/src/main.ts', ready: 'tool service started' },
  { name: 'tools', entry: 'services/tools/src/main.ts', ready: 'tools service started' },
  {
    name: 'agent-worker',
    entry: 'services/agent-worker/src/main.ts',
    ready: 'agent worker started',
  },
  { name: 'api', entry: 'services/api/src/main.ts', ready: 'api listening' },
  {
    name: 'sandbox-reaper',
    entry: 'services/sandbox-reaper/src/main.ts',
    ready: 'sandbox reaper started',
  },
] as const;
const onceMode = process.argv.includes('--once');
const clusterMode = process.argv.includes('--cluster');

const say = (line: string) => console.log(`[stack] ${line}`);
const servers: { stop(): Promise<void> }[] = [];
const children: ChildProcess[] = [];
let stopping = false;

async function stopAll(code: number): Promise<never> {
  stopping = true;
  for (const c of children) if (c.exitCode === null) c.kill('SIGTERM');
  await Promise.all(children.filter((c) => c.exitCode === null).map((c) => once(c, 'exit')));
  for (const s of servers.reverse()) await s.stop().catch(() => undefined);
  say('stopped');
  process.exit(code);
}

/** What an acknowledged JetStream write survives on this server, in a line. */
function jetStreamSync(nats: LocalNats): string {
  if (nats.syncAlways) return 'JetStream fsyncs every write before acknowledging it';
  return (
    `nats-server ${nats.version} has no sync_interval (2.10 and later): JetStream fsyncs every ` +
    '2 minutes, so an OS crash or power loss may lose acknowledged calls (docs/operations.md)'
  );
}

/** The NATS user of each service when the stack runs its own (authenticated) nats-server. */
function natsEnvOf(svc: (typeof SERVICES)[number], auth: NatsAuthFiles | undefined) {
  if (auth === undefined) return {};
  return {
    CG__NATS__CREDS: auth.creds[svc.name],
    // Only the api signs project credentials; no other service gets the account's keys.
    ...(svc.name === 'api' ? { CG__NATS__AUTH_KEYS: auth.keysFile } : {}),
  };
}

function startService(svc: (typeof SERVICES)[number], env: Record<string, string>): Promise<void> {
  const child = spawn(process.execPath, [join(ROOT, svc.entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  return new Promise((resolve, reject) => {
    for (const stream of [child.stdout, child.stderr]) {
      createInterface({ input: stream }).on('line', (line) => {
        console.log(`[${svc.name}] ${line}`);
        if (line.includes(svc.ready)) resolve();
      });
    }
    child.once('exit', (code, signal) => {
      if (!stopping) {
        say(`${svc.name} exited (${signal ?? code}); stopping the stack`);
        void stopAll(1);
      }
      reject(new Error(`${svc.name} exited before it was ready`));
    });
  });
}

/** Resolves when host:port can be bound; EADDRINUSE (and the like) as the error otherwise. */
function probePort(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen({ host, port, exclusive: true }, () => server.close(() => resolve()));
  });
}

/** The api's port, checked before anything starts: a taken one is a sentence, not a trace. */
async function checkApiPort(): Promise<void> {
  let api;
  try {
    api = loadConfig({ env: process.env }).api;
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    say(`configuration: ${err.message}`);
    process.exit(2);
  }
  const { host, port } = api;
  try {
    await probePort(host, port);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const why =
      code === 'EADDRINUSE'
        ? `port ${port} on ${host} is already in use (another program, or another pnpm stack)`
        : `port ${port} on ${host} cannot be used (${code ?? (err as Error).message})`;
    say(`the api cannot listen: ${why}.`);
    say(`choose another port: CG__API__PORT=${port === 65535 ? 8081 : port + 1} pnpm stack`);
    say('(or set `port` under [api] in config.toml)');
    process.exit(2);
  }
}

/**
 * Where the local Postgres keeps its data: .data/postgres, unless the stack runs as root in a
 * checkout the `postgres` OS user cannot enter (a clone in /root, which is 0700 on Debian). The
 * server refuses to run as root, so its data then goes under /var/lib/toolmesh, one folder per
 * checkout.
 */
function postgresDir(): string {
  const preferred = join(DATA, 'postgres');
  if (process.getuid?.() !== 0) return preferred;
  const probe = spawnSync('runuser', ['-u', 'postgres', '--', 'test', '-x', DATA]);
  if (probe.status === 0) return preferred;
  const id = createHash('sha256').update(ROOT).digest('hex').slice(0, 12);
  const dir = join('/var/lib/toolmesh', `postgres-${id}`);
  say(`the postgres OS user cannot enter ${DATA} (a parent folder is private): data in ${dir}`);
  return dir;
}

/**
 * Where sandboxes live when the stack runs as root: their commands run as `sandbox.uid`, which
 * must enter the folder. A checkout in /root (0700) cannot hold it, so it then goes under
 * /var/lib/toolmesh, one folder per checkout, as Postgres's data does. Undefined: the
 * configured `sandbox.root_dir` (set by the operator, or `.data/sandboxes`) is fine.
 */
function sandboxRootDir(): string | undefined {
  if (process.getuid?.() !== 0 || process.env['CG__SANDBOX__ROOT_DIR']) return undefined;
  const { uid, gid, root_dir } = loadConfig({ env: process.env }).sandbox;
  const preferred = resolve(ROOT, root_dir);
  const probe = spawnSync('/usr/bin/test', ['-x', dirname(preferred)], { uid, gid });
  if (probe.status === 0) return undefined;
  const id = createHash('sha256').update(ROOT).digest('hex').slice(0, 12);
  const dir = join('/var/lib/toolmesh', `sandboxes-${id}`);
  say(`sandboxed commands (uid ${uid}) cannot enter ${dirname(preferred)}: sandboxes in ${dir}`);
  return dir;
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

await checkApiPort();

try {
  await mkdir(DATA, { recursive: true });
  let natsUrl = process.env['NATS_URL'];
  // Our own nats-server runs with JWT authentication: keys made once in .data/nats-auth, a
  // user per service. A NATS_URL given from outside is used as it is (its auth is its own).
  // --cluster runs three servers without authentication (a local trial of replication).
  let natsAuth: NatsAuthFiles | undefined;
  if (!natsUrl && clusterMode) {
    const cluster = await startNatsCluster({
      nodes: 3,
      dir: join(DATA, 'nats-cluster'),
      syncAlways: true,
    });
    servers.push({ stop: () => cluster.close() });
    natsUrl = cluster.url;
    say(
      `three-node NATS cluster with JetStream on ${natsUrl} (stores in .data/nats-cluster; no auth)`,
    );
    say(jetStreamSync(cluster.nodes[0] as LocalNats));
  } else if (!natsUrl) {
    const root = loadConfig({ env: process.env }).nats.subject_root;
    const nats = await startLocalNats({
      dir: join(DATA, 'nats'),
      syncAlways: true,
      config: async ({ port, storeDir, syncAlways }) => {
        natsAuth = await ensureNatsAuth(join(DATA, 'nats-auth'), root, {
          host: '127.0.0.1',
          port,
          storeDir: join(storeDir, 'jetstream'),
          resolverDir: join(storeDir, 'jwt'),
          maxPayloadBytes: 1024 * 1024,
          syncAlways,
        });
        return readFile(natsAuth.confFile, 'utf8');
      },
    });
    servers.push(nats);
    natsUrl = nats.url;
    say(`nats-server with JetStream and JWT auth on ${natsUrl} (keys in .data/nats-auth)`);
    say(jetStreamSync(nats));
  }
  let dbUrl = process.env['DATABASE_URL'];
  if (!dbUrl) {
    const pg = await startLocalPostgres({ dir: postgresDir() });
    servers.push(pg);
    dbUrl = pg.url.replace(/\/postgres$/, '/toolmesh');
    say(
      `Postgres on 127.0.0.1:${pg.port} (data in ${pg.dir}; fsync, synchronous_commit, full_page_writes on)`,
    );
  }
  // A local admin key, made once and kept in .data/, so the api can create projects.
  let adminKey = process.env['CG__API__ADMIN_KEY'];
  if (!adminKey) {
    const file = join(DATA, 'admin_key');
    adminKey = await readFile(file, 'utf8').then(
      (k) => k.trim(),
      async () => {
        const k = `tma_${randomBytes(24).toString('base64url')}`;
        await writeFile(file, `${k}\n`, { mode: 0o600 });
        return k;
      },
    );
  }
  // Likewise the key project secrets are sealed with: the same one on every start, or the
  // secrets stored earlier would no longer open.
  let secretsKey = process.env['CG__SECRETS__KEY'];
  if (!secretsKey) {
    const file = join(DATA, 'secrets_key');
    secretsKey = await readFile(file, 'utf8').then(
      (k) => k.trim(),
      async () => {
        const k = randomBytes(32).toString('base64');
        await writeFile(file, `${k}\n`, { mode: 0o600 });
        return k;
      },
    );
  }
  const env: Record<string, string> = {
    CG__API__ADMIN_KEY: adminKey,
    CG__SECRETS__KEY: secretsKey,
    CG__NATS__URL: natsUrl,
    ...(clusterMode ? { CG__NATS__REPLICAS: process.env['CG__NATS__REPLICAS'] ?? '3' } : {}),
    CG__POSTGRES__URL: dbUrl,
    CG__ARTIFACTS__ROOT: process.env['CG__ARTIFACTS__ROOT'] ?? join(DATA, 'artifacts'),
  };
  const sandboxes = sandboxRootDir();
  if (sandboxes !== undefined) env['CG__SANDBOX__ROOT_DIR'] = sandboxes;
  let config = loadConfig({ env: { ...process.env, ...env } });
  // No LLM key and the default endpoint: the agent worker talks to a scripted model started
  // here (it draws what it is asked with the draw-image skill, then submits the picture).
  let model = `${config.llm.model} at ${config.llm.base_url}`;
  if (config.llm.api_key === '' && !process.env['CG__LLM__BASE_URL']) {
    const scripted = await startScriptedOpenAI({ fallback: demoModelReply });
    servers.push(scripted);
    env['CG__LLM__BASE_URL'] = scripted.url;
    config = loadConfig({ env: { ...process.env, ...env } });
    model = `the scripted model at ${scripted.url} (set CG__LLM__API_KEY for a real one)`;
    say(`no LLM key set: agents talk to ${model}`);
  }
  const logger = pino({ level: 'warn' });
  await ensureDatabase({
    url: dbUrl,
    connectTimeoutMs: config.postgres.connect_timeout_ms,
    logger,
  });
  const pool = createPool({
    url: dbUrl,
    max: 1,
    statementTimeoutMs: 0,
    connectTimeoutMs: config.postgres.connect_timeout_ms,
    logger,
  });
  const { applied } = await migrate({ pool, logger });
  await pool.end();
  say(`database migrated (${applied.length} new migration${applied.length === 1 ? '' : 's'})`);
  const apiHost = config.api.host === '0.0.0.0' ? '127.0.0.1' : config.api.host;
  const target: DemoTarget = {
    natsUrl,
    root: config.nats.subject_root,
    apiUrl: `http://${apiHost}:${config.api.port}`,
    adminKey,
    model,
  };
  // Holds the admin key: readable by this user only, like .data/admin_key.
  await writeFile(join(DATA, 'stack.json'), JSON.stringify(target, null, 2), { mode: 0o600 });

  await Promise.all(SERVICES.map((s) => startService(s, { ...env, ...natsEnvOf(s, natsAuth) })));
  say(`services up: ${SERVICES.map((s) => s.name).join(', ')}`);
  say(`api on ${target.apiUrl} (admin key in .data/admin_key)`);
  const ok = await runDemo(target).catch((err: unknown) => {
    say(`demo failed: ${(err as Error).message}`);
    return false;
  });
  say(ok ? 'demo succeeded' : 'demo FAILED');
  if (onceMode) await stopAll(ok ? 0 : 1);
  say('running; press Ctrl-C to stop');
} catch (err) {
  say(`failed: ${(err as Error).message}`);
  await stopAll(1);
}
