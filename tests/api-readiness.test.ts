// The api's readiness follows its bus, and SIGTERM does not wait for a bus that is gone. The api
// runs as a process of its own against an authenticated nats-server of this file's own (as
// deployed: operator mode, the api's user): stopping the server turns /readyz 503 naming nats and
// starting it again turns it ready; a server that keeps its socket open but answers nothing (a
// frozen process, a partition) does too, within [api] readyz_nats_timeout_ms, where the probe
// used to wait for the client's stale-connection detection; and with the server killed for good
// the api still stops cleanly.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { pino } from 'pino';
import { createPool, migrate } from '@toolmesh/store';
import {
  freePort,
  startTestNatsServer,
  useNats,
  usePostgres,
  type TestNats,
  type TestNatsServer,
  type TestPostgres,
} from '@toolmesh/testing';
import { REPO_ROOT } from './support/mesh.ts';
import { processesWith, spawnReady, until } from './support/procs.ts';

let server: TestNatsServer;
let nats: TestNats;
let db: TestPostgres;
let api: ChildProcess | undefined;
let url = '';

beforeAll(async () => {
  server = await startTestNatsServer();
  nats = await useNats({ server });
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
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  api = await spawnReady(
    join(REPO_ROOT, 'services/api/src/main.ts'),
    {
      ...nats.env('api'),
      CG__NATS__RECONNECT_WAIT_MS: '200',
      CG__POSTGRES__URL: db.url,
      CG__API__PORT: String(port),
      CG__LOG__LEVEL: 'info',
    },
    'api listening',
    'api',
  );
}, 60_000);

afterAll(async () => {
  if (api && api.exitCode === null && api.signalCode === null) {
    api.kill('SIGKILL');
    await once(api, 'exit');
  }
  await nats?.cleanup();
  await server?.close();
  await db?.cleanup();
});

async function readyz(): Promise<{ status: number; body: unknown }> {
  const res = await fetch(`${url}/readyz`);
  return { status: res.status, body: await res.json() };
}

/** Polls /readyz until it answers `status`; resolves with that answer. */
const readyzTurns = (status: number) =>
  until(async () => {
    const r = await readyz();
    return r.status === status ? r : undefined;
  }, 30_000);

it(
  'answers 503 naming nats while its NATS server is down, and ready again once it is back',
  { timeout: 90_000 },
  async () => {
    expect(await readyz()).toEqual({
      status: 200,
      body: { status: 'ok', checks: { postgres: 'ok', nats: 'ok' } },
    });

    await server.stop();
    expect(await readyzTurns(503)).toEqual({
      status: 503,
      body: { status: 'unavailable', checks: { postgres: 'ok', nats: 'unavailable' } },
    });
    // Liveness stays: a reconnecting connection is not a reason to restart the process.
    expect((await fetch(`${url}/healthz`)).status).toBe(200);

    await server.start();
    expect(await readyzTurns(200)).toEqual({
      status: 200,
      body: { status: 'ok', checks: { postgres: 'ok', nats: 'ok' } },
    });
  },
);

it(
  'answers 503 naming nats while its server is frozen, and ready again once it answers',
  { timeout: 90_000 },
  async () => {
    await readyzTurns(200);
    // The server's command line names its configuration file, in its own folder.
    const [pid, ...others] = await processesWith(join(server.dir, 'nats.conf'));
    expect(others).toEqual([]);
    process.kill(pid!, 'SIGSTOP');
    try {
      expect(await readyz()).toEqual({
        status: 503,
        body: { status: 'unavailable', checks: { postgres: 'ok', nats: 'unavailable' } },
      });
    } finally {
      process.kill(pid!, 'SIGCONT');
    }
    expect((await readyzTurns(200)).body).toEqual({
      status: 'ok',
      checks: { postgres: 'ok', nats: 'ok' },
    });
  },
);

it('stops on SIGTERM with exit 0 while its NATS server is gone', { timeout: 60_000 }, async () => {
  const child = api!;
  await server.kill();
  // The api notices the lost server first, as it would in production before the stop comes.
  await readyzTurns(503);
  const exited = once(child, 'exit') as Promise<[number | null, NodeJS.Signals | null]>;
  child.kill('SIGTERM');
  expect(await exited).toEqual([0, null]);
});
