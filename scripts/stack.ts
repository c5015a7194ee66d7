// `pnpm stack`: the whole mesh on this machine, without Docker. It uses NATS_URL / DATABASE_URL
// when given; otherwise it starts nats-server and a Postgres from the local binaries under
// .data/ (kept between runs). Then it migrates, starts each service as its own process with its
// log lines prefixed (with a scripted model for the agent worker when no LLM key is set), runs
// the demo (an agent task drawing a picture), and keeps running until Ctrl-C, which stops them all.
//   --once   stop after the demo (exit code 0 when the demo succeeded)
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { createInterface } from 'node:readline';
import { pino } from 'pino';
import { loadConfig } from '@toolmesh/config';
import { createPool, ensureDatabase, migrate } from '@toolmesh/store';
import {
  demoModelReply,
  startLocalNats,
  startLocalPostgres,
  startScriptedOpenAI,
} from '@toolmesh/testing';
import { runDemo, type DemoTarget } from './demo.ts';

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

process.on('SIGINT', () => void stopAll(0));
process.on('SIGTERM', () => void stopAll(0));

try {
  await mkdir(DATA, { recursive: true });
  let natsUrl = process.env['NATS_URL'];
  if (!natsUrl) {
    const nats = await startLocalNats({ dir: join(DATA, 'nats') });
    servers.push(nats);
    natsUrl = nats.url;
    say(`nats-server with JetStream on ${natsUrl} (store in .data/nats)`);
  }
  let dbUrl = process.env['DATABASE_URL'];
  if (!dbUrl) {
    const pg = await startLocalPostgres({ dir: join(DATA, 'postgres') });
    servers.push(pg);
    dbUrl = pg.url.replace(/\/postgres$/, '/toolmesh');
    say(`Postgres on 127.0.0.1:${pg.port} (data in .data/postgres)`);
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
    CG__POSTGRES__URL: dbUrl,
    CG__ARTIFACTS__ROOT: process.env['CG__ARTIFACTS__ROOT'] ?? join(DATA, 'artifacts'),
  };
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

  await Promise.all(SERVICES.map((s) => startService(s, env)));
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
