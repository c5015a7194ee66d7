// Every process that holds a NATS connection stops on SIGTERM with exit 0 when its server is no
// longer there (the api's case is in api-readiness.test.ts): the drain at stop fails or is cut
// off at [nats] drain_timeout_ms and the connection is closed, instead of the stop failing (exit
// 1) or waiting for an answer that never comes. Two ways a server goes: killed (the socket
// closes, the client reconnects in vain) and frozen (the socket stays open, nothing answers; the
// drain's PING would wait for ever). Each service runs as its own process, against an
// authenticated nats-server of this file's own with its deployed user.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { expect, it } from 'vitest';
import { pino } from 'pino';
import { ServiceUser } from '@toolmesh/nats-auth';
import { createPool, migrate } from '@toolmesh/store';
import { startTestNatsServer, useNats, usePostgres, type TestPostgres } from '@toolmesh/testing';
import { REPO_ROOT } from './support/mesh.ts';
import { processesWith, spawnReady } from './support/procs.ts';

const SERVICES = [
  { name: ServiceUser.skills, ready: 'tool service started' },
  { name: ServiceUser.tools, ready: 'tools service started' },
  { name: ServiceUser.agentWorker, ready: 'agent worker started' },
] as const;

/** Starts NATS, a migrated database and the three services; `close()` cleans up after them. */
async function startAll() {
  const server = await startTestNatsServer();
  const nats = await useNats({ server });
  const db: TestPostgres = await usePostgres();
  const children = new Map<string, ChildProcess>();
  const close = async () => {
    for (const c of children.values()) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await once(c, 'exit');
      }
    }
    await nats.cleanup();
    await server.close();
    await db.cleanup();
  };
  try {
    const logger = pino({ level: 'silent' });
    const pool = createPool({
      url: db.url,
      max: 1,
      statementTimeoutMs: 0,
      connectTimeoutMs: 5_000,
      logger,
    });
    await migrate({ pool, logger });
    await pool.end();
    for (const s of SERVICES) {
      const child = await spawnReady(
        join(REPO_ROOT, `services/${s.name}/src/main.ts`),
        {
          ...nats.env(s.name),
          CG__POSTGRES__URL: db.url,
          CG__LOG__LEVEL: 'info',
        },
        s.ready,
        s.name,
      );
      children.set(s.name, child);
    }
  } catch (err) {
    await close();
    throw err;
  }
  return { server, children, close };
}

/** SIGTERMs every child at once; resolves with each one's exit code and signal. */
async function terminate(children: Map<string, ChildProcess>) {
  const exits = [...children].map(async ([name, child]) => {
    const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
    child.kill('SIGTERM');
    return [name, await exited] as const;
  });
  return Object.fromEntries(await Promise.all(exits));
}

const CLEAN = { skills: [0, null], tools: [0, null], 'agent-worker': [0, null] };

it(
  'skills, tools and agent-worker exit 0 on SIGTERM with their NATS server killed',
  { timeout: 90_000 },
  async () => {
    const all = await startAll();
    try {
      await all.server.kill();
      expect(await terminate(all.children)).toEqual(CLEAN);
    } finally {
      await all.close();
    }
  },
);

it(
  'skills, tools and agent-worker exit 0 on SIGTERM with their NATS server frozen',
  { timeout: 90_000 },
  async () => {
    const all = await startAll();
    // The server's command line names its configuration file, in its own folder.
    const [pid] = await processesWith(join(all.server.dir, 'nats.conf'));
    expect(pid).toEqual(expect.any(Number));
    process.kill(pid!, 'SIGSTOP');
    try {
      expect(await terminate(all.children)).toEqual(CLEAN);
    } finally {
      process.kill(pid!, 'SIGCONT');
      await all.close();
    }
  },
);
