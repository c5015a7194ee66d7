// Every process that holds a NATS connection stops on SIGTERM with exit 0 after its server is
// gone for good (the api's case is in api-readiness.test.ts): the drain at stop fails or is cut
// off at [nats] drain_timeout_ms and the connection is closed, instead of the stop failing (exit
// 1) or waiting for a reconnect that never comes. Each runs as its own process, against an
// authenticated nats-server of this file's own with its deployed user.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pino } from 'pino';
import { ServiceUser } from '@toolmesh/bus';
import { createPool, migrate } from '@toolmesh/store';
import { usePostgres, type TestPostgres } from '@toolmesh/testing';
import { startAuthNats, type AuthNats } from './support/auth-nats.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { spawnReady } from './support/procs.ts';

const SERVICES = [
  { name: ServiceUser.skills, ready: 'tool service started' },
  { name: ServiceUser.tools, ready: 'tools service started' },
  { name: ServiceUser.agentWorker, ready: 'agent worker started' },
] as const;

let nats: AuthNats;
let db: TestPostgres;
const children = new Map<string, ChildProcess>();

beforeAll(async () => {
  nats = await startAuthNats(`sw${Date.now().toString(36)}`);
  db = await usePostgres();
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
        CG__NATS__URL: nats.url,
        CG__NATS__SUBJECT_ROOT: nats.root,
        CG__NATS__CREDS: await nats.creds(s.name),
        CG__POSTGRES__URL: db.url,
        CG__LOG__LEVEL: 'info',
      },
      s.ready,
      s.name,
    );
    children.set(s.name, child);
  }
}, 90_000);

afterAll(async () => {
  for (const c of children.values()) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await once(c, 'exit');
    }
  }
  await nats?.close();
  await db?.cleanup();
});

it(
  'skills, tools and agent-worker exit 0 on SIGTERM with their NATS server killed',
  { timeout: 60_000 },
  async () => {
    await nats.server.kill();
    const exits = [...children].map(async ([name, child]) => {
      const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
      child.kill('SIGTERM');
      return [name, await exited] as const;
    });
    expect(Object.fromEntries(await Promise.all(exits))).toEqual({
      skills: [0, null],
      tools: [0, null],
      'agent-worker': [0, null],
    });
  },
);
