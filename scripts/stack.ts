// `pnpm stack`: the whole mesh on this machine, without Docker. It uses NATS_URL / DATABASE_URL
// when given; otherwise it starts nats-server and a Postgres from the local binaries under
// .data/ (kept between runs). Then it migrates, starts each service as its own process with its
// log lines prefixed (with a scripted model for the agent worker when no LLM key is set), runs
// the demo (an agent task drawing a picture), and keeps running until Ctrl-C, which stops them all.
// A service counts as up once it says so over HTTP (the api's /readyz, the others' /healthz),
// not when it logged a line. The only fixed port is the api's: every health port left at 0 gets
// a free one here, and a port that is taken is named with the key that changes it before
// anything starts. A second stack beside a running one (another CG__API__PORT) keeps its
// servers and files in .data/stacks/api-<port>, so the two never share a database or a store.
// Its flags: `pnpm stack --help` (stack-args.ts). STACK_DATA_DIR names another folder than .data
// (the keys, and the first stack's servers).
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { once } from 'node:events';
import { createServer } from 'node:net';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { ConfigError, loadConfig, type Config } from '@toolmesh/config';
import { createPool, ensureDatabase, migrate } from '@toolmesh/store';
import {
  demoModelReply,
  freePort,
  startLocalNats,
  startLocalPostgres,
  startNatsCluster,
  startScriptedOpenAI,
  type LocalNats,
} from '@toolmesh/testing';
import { runDemo, type DemoTarget } from './demo.ts';
import { ensureNatsAuth, type NatsAuthFiles } from './nats-auth.ts';
import { DATA, ROOT, postgresDir, sandboxRootDir, stateDir } from './stack-state.ts';
import { ensureLocalProject } from './stack-local.ts';
import { localStackSettings } from './stack-examples.ts';
import { parseStackArgs, STACK_USAGE, type StackArgs } from './stack-args.ts';
import { stackFormatter } from './stack-output.ts';
import { credsAuthenticator } from '@nats-io/transport-node';
import { natsServerConfig } from '@toolmesh/nats-auth';

/** Where a process answers whether it is up, and the key that moves it. */
interface Probe {
  section: string;
  key: string;
  path: '/readyz' | '/healthz';
  listen(c: Config): { host: string; port: number };
}
const SERVICES = [
  {
    name: 'skills',
    entry: 'services/skills/src/main.ts',
    probe: {
      section: 'skills',
      key: 'health_port',
      path: '/healthz',
      listen: (c) => ({ host: c.skills.health_host, port: c.skills.health_port }),
    },
  },
  {
    name: 'tools',
    entry: 'services/tools/src/main.ts',
    probe: {
      section: 'tools',
      key: 'health_port',
      path: '/healthz',
      listen: (c) => ({ host: c.tools.health_host, port: c.tools.health_port }),
    },
  },
  {
    name: 'agent-worker',
    entry: 'services/agent-worker/src/main.ts',
    probe: {
      section: 'agent',
      key: 'health_port',
      path: '/healthz',
      listen: (c) => ({ host: c.agent.health_host, port: c.agent.health_port }),
    },
  },
  {
    name: 'api',
    entry: 'services/api/src/main.ts',
    probe: {
      section: 'api',
      key: 'port',
      path: '/readyz',
      listen: (c) => ({ host: c.api.host, port: c.api.port }),
    },
  },
  {
    name: 'sandbox-reaper',
    entry: 'services/sandbox-reaper/src/main.ts',
    probe: {
      section: 'reaper',
      key: 'health_port',
      path: '/healthz',
      listen: (c) => ({ host: c.reaper.health_host, port: c.reaper.health_port }),
    },
  },
] as const satisfies readonly { name: string; entry: string; probe: Probe }[];
type Service = (typeof SERVICES)[number];
/** How long a service may take to answer its probe with 200 (a first start builds sandboxes). */
const READY_TIMEOUT_MS = 180_000;

const say = (line: string) => console.log(`[stack] ${line}`);
let args: StackArgs;
try {
  args = parseStackArgs(process.argv.slice(2));
} catch (err) {
  say((err as Error).message);
  console.log(STACK_USAGE);
  process.exit(2);
}
if (args.help) {
  console.log(STACK_USAGE);
  process.exit(0);
}
const onceMode = args.once;
/** The services' lines: readable on a terminal, JSON elsewhere and with --json. */
const format = stackFormatter(process.argv, process.stdout);
const clusterMode = args.cluster;
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

/**
 * The nats-server's permission violations, as lines of the stack's output: a service asking for
 * what its user may not have is a bug to see at once, not a line in a log nobody reads.
 */
function reportViolations(): (text: string) => void {
  let partial = '';
  return (text) => {
    const lines = (partial + text).split('\n');
    partial = lines.pop() ?? '';
    for (const line of lines) if (/Violation/.test(line)) say(`nats-server: ${line.trim()}`);
  };
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
function natsEnvOf(svc: Service, auth: NatsAuthFiles | undefined) {
  if (auth === undefined) return {};
  return {
    CG__NATS__CREDS: auth.creds[svc.name],
    // Only the api signs project credentials; no other service gets the account's keys.
    ...(svc.name === 'api' ? { CG__NATS__AUTH_KEYS: auth.keysFile } : {}),
  };
}

/** The URL a probe answers on; a service listening on every address is asked on loopback. */
function probeUrl(svc: Service, config: Config): string {
  const { host, port } = svc.probe.listen(config);
  const h = host === '0.0.0.0' || host === '::' ? '127.0.0.1' : host;
  return `http://${h.includes(':') ? `[${h}]` : h}:${port}${svc.probe.path}`;
}

/** Whether the URL answers 200 now. */
async function answers(url: string): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(2_000) });
    await res.body?.cancel();
    return res.ok;
  } catch {
    return false;
  }
}

/** Starts the service; resolves once its probe answers 200 (its readiness, not a log line). */
function startService(svc: Service, env: Record<string, string>, config: Config): Promise<void> {
  const child = spawn(process.execPath, [join(ROOT, svc.entry)], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  children.push(child);
  for (const stream of [child.stdout, child.stderr]) {
    createInterface({ input: stream }).on('line', (line) => console.log(format(svc.name, line)));
  }
  let exited = false;
  const url = probeUrl(svc, config);
  return new Promise((resolve, reject) => {
    child.once('exit', (code, signal) => {
      exited = true;
      if (!stopping) {
        say(`${svc.name} exited (${signal ?? code}); stopping the stack`);
        void stopAll(1);
      }
      reject(new Error(`${svc.name} exited before it was ready`));
    });
    const deadline = Date.now() + READY_TIMEOUT_MS;
    const poll = async (): Promise<void> => {
      while (!exited) {
        if (await answers(url)) return resolve();
        if (Date.now() > deadline) {
          return reject(new Error(`${svc.name} did not answer ${url} with 200 in time`));
        }
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    void poll();
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

/**
 * Every port the services will listen on, checked before anything starts: a taken one is a
 * sentence naming the key that moves it, not a trace. A port of 0 (any free one, which the
 * stack could not ask) is given a free port here. Returns the variables that set those.
 */
async function checkPorts(): Promise<Record<string, string>> {
  let config: Config;
  try {
    config = loadConfig({ env: process.env });
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    say(`configuration: ${err.message}`);
    process.exit(2);
  }
  const chosen: Record<string, string> = {};
  for (const svc of SERVICES) {
    const { section, key } = svc.probe;
    const variable = `CG__${section.toUpperCase()}__${key.toUpperCase()}`;
    const { host, port } = svc.probe.listen(config);
    if (port === 0) {
      chosen[variable] = String(await freePort());
      continue;
    }
    try {
      await probePort(host, port);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      const why =
        code === 'EADDRINUSE'
          ? `port ${port} on ${host} is already in use (another program, or another pnpm stack)`
          : `port ${port} on ${host} cannot be used (${code ?? (err as Error).message})`;
      const next = port === 65535 ? 8081 : port + 1;
      if (svc.name === 'api') {
        say(`the api cannot listen: ${why}.`);
        say(`choose another port: ${variable}=${next} pnpm stack`);
      } else {
        say(`the ${svc.name} service cannot serve its health checks: ${why}.`);
        say(`choose another port: ${variable}=${next} pnpm stack (0 picks a free one)`);
      }
      say(`(or set \`${key}\` under [${section}] in config.toml)`);
      process.exit(2);
    }
  }
  return chosen;
}

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

const ports = await checkPorts();

try {
  await mkdir(DATA, { recursive: true });
  const apiPort = ports['CG__API__PORT'] ?? String(loadConfig({ env: process.env }).api.port);
  const STATE = await stateDir(apiPort);
  let natsUrl = process.env['NATS_URL'];
  // Our own nats-server runs with JWT authentication: keys made once in .data/nats-auth, a
  // user per service. A NATS_URL given from outside is used as it is (its auth is its own).
  // --cluster runs three servers with the same authentication (a local trial of replication).
  let natsAuth: NatsAuthFiles | undefined;
  if (!natsUrl && clusterMode) {
    // The same keys and users as a single server; every node trusts them.
    const root = loadConfig({ env: process.env }).nats.subject_root;
    const auth = await ensureNatsAuth(join(STATE, 'nats-auth'), root, {
      host: '127.0.0.1',
      port: 0,
      storeDir: join(STATE, 'nats-cluster', 'jetstream'),
      resolverDir: join(STATE, 'nats-cluster', 'jwt'),
    });
    natsAuth = auth;
    const cluster = await startNatsCluster({
      nodes: 3,
      dir: join(STATE, 'nats-cluster'),
      syncAlways: true,
      onOutput: reportViolations(),
      config: ({ port, storeDir, cluster: node, syncAlways }) =>
        natsServerConfig(auth.keys, {
          host: '127.0.0.1',
          port,
          storeDir: join(storeDir, 'jetstream'),
          resolverDir: join(storeDir, 'jwt'),
          maxPayloadBytes: 1024 * 1024,
          syncAlways,
          cluster: node,
        }),
      connectOptions: {
        authenticator: credsAuthenticator(await readFile(auth.creds.admin)),
      },
    });
    servers.push({ stop: () => cluster.close() });
    natsUrl = cluster.url;
    say(
      `three-node NATS cluster with JetStream and JWT auth on ${natsUrl} (stores in ${join(STATE, 'nats-cluster')}, keys in ${join(STATE, 'nats-auth')})`,
    );
    say(jetStreamSync(cluster.nodes[0] as LocalNats));
  } else if (!natsUrl) {
    const root = loadConfig({ env: process.env }).nats.subject_root;
    const nats = await startLocalNats({
      dir: join(STATE, 'nats'),
      // Ctrl-C stops the services first, then this server: none logs its going away.
      ownProcessGroup: true,
      syncAlways: true,
      onOutput: reportViolations(),
      config: async ({ port, storeDir, syncAlways }) => {
        natsAuth = await ensureNatsAuth(join(STATE, 'nats-auth'), root, {
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
    say(
      `nats-server with JetStream and JWT auth on ${natsUrl} (keys in ${join(STATE, 'nats-auth')})`,
    );
    say(jetStreamSync(nats));
  }
  let dbUrl = process.env['DATABASE_URL'];
  if (!dbUrl) {
    const pg = await startLocalPostgres({ dir: postgresDir(STATE) });
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
    ...ports,
    CG__API__ADMIN_KEY: adminKey,
    CG__SECRETS__KEY: secretsKey,
    CG__NATS__URL: natsUrl,
    ...(clusterMode ? { CG__NATS__REPLICAS: process.env['CG__NATS__REPLICAS'] ?? '3' } : {}),
    CG__POSTGRES__URL: dbUrl,
    CG__ARTIFACTS__ROOT: process.env['CG__ARTIFACTS__ROOT'] ?? join(STATE, 'artifacts'),
  };
  const sandboxes = sandboxRootDir(STATE);
  if (sandboxes !== undefined) env['CG__SANDBOX__ROOT_DIR'] = sandboxes;
  const offered = localStackSettings(
    loadConfig({ env: { ...process.env, ...env } }),
    ROOT,
    process.env,
    { allowLoopback: args.allowLoopback },
  );
  Object.assign(env, offered.env);
  for (const line of offered.lines) say(line);
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
  await writeFile(join(STATE, 'stack.json'), JSON.stringify(target, null, 2), { mode: 0o600 });

  await Promise.all(
    SERVICES.map((s) => startService(s, { ...env, ...natsEnvOf(s, natsAuth) }, config)),
  );
  say(`services up: ${SERVICES.map((s) => `${s.name} (${probeUrl(s, config)})`).join(', ')}`);
  say(`api on ${target.apiUrl} (admin key in ${join(DATA, 'admin_key')})`);
  // A project for local use: `toolmesh`, the SDK and `toolmesh mcp serve` find it in stack.json.
  const local = await ensureLocalProject({ apiUrl: target.apiUrl, adminKey, dir: STATE });
  const consoleUrl = `${target.apiUrl}/console`;
  await writeFile(
    join(STATE, 'stack.json'),
    JSON.stringify({ ...target, ...local, consoleUrl }, null, 2),
    { mode: 0o600 },
  );
  say(`console on ${consoleUrl}: sign in with the key ${local.apiKey} (project ${local.project})`);
  say(
    `toolmesh, the SDK and \`toolmesh mcp serve\` use this stack and the project ${local.project} with no flags (${join(STATE, 'stack.json')})`,
  );
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
