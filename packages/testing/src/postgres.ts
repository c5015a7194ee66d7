// The Postgres fixture: a fresh, empty database per call, so test files never see each other's
// rows. The server is DATABASE_URL when set, else a testcontainers postgres container when a
// Docker engine answers, else a local server from the Postgres binaries; the last two are
// started once per test process and live until it exits.
import { randomBytes } from 'node:crypto';
import pg from 'pg';
import { dockerAvailable } from './docker.ts';
import { sharedPerProcess } from './processes.ts';
import { startLocalPostgres } from './local-postgres.ts';

export interface TestPostgres {
  /** URL of the fresh database. */
  url: string;
  /** Its name: `t_` and 10 hex digits. */
  database: string;
  /** Drops the database, cutting any connection still open to it. */
  cleanup(): Promise<void>;
}

const POSTGRES_IMAGE = 'postgres:15-alpine';
const SHARED = Symbol.for('toolmesh.testing.postgresServer');

export async function usePostgres(): Promise<TestPostgres> {
  const server = process.env['DATABASE_URL'] ?? (await sharedServer());
  const database = `t_${randomBytes(5).toString('hex')}`;
  const name = pg.escapeIdentifier(database);
  await onServer(server, `CREATE DATABASE ${name}`);
  let dropped = false;
  return {
    url: withDatabase(server, database),
    database,
    cleanup: async () => {
      if (dropped) return;
      dropped = true;
      // FORCE: a test that forgot to end its pool must not leave the database behind.
      await onServer(server, `DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    },
  };
}

/** The same server and credentials, another database. */
function withDatabase(url: string, database: string): string {
  const u = new URL(url);
  u.pathname = `/${encodeURIComponent(database)}`;
  return u.href;
}

// CREATE and DROP DATABASE cannot run inside the database they touch, so they go through the
// server's `postgres` database.
async function onServer(url: string, sql: string): Promise<void> {
  const client = new pg.Client({
    connectionString: withDatabase(url, 'postgres'),
    connectionTimeoutMillis: 10_000,
  });
  try {
    await client.connect();
  } catch (err) {
    const where = new URL(url);
    throw new Error(`cannot connect to Postgres at ${where.host}`, { cause: err });
  }
  try {
    await client.query(sql);
  } finally {
    await client.end();
  }
}

function sharedServer(): Promise<string> {
  return sharedPerProcess(SHARED, startServer);
}

async function startServer(): Promise<string> {
  if (await dockerAvailable()) {
    const { GenericContainer, Wait } = await import('testcontainers');
    // Stopped by testcontainers' reaper when this process ends. The ready line appears twice:
    // once for the init-time server, once for the real one.
    const container = await new GenericContainer(POSTGRES_IMAGE)
      .withEnvironment({ POSTGRES_HOST_AUTH_METHOD: 'trust' })
      .withCommand(['postgres', '-c', 'fsync=off', '-c', 'max_connections=200'])
      .withTmpFs({ '/var/lib/postgresql/data': 'rw' })
      .withExposedPorts(5432)
      .withWaitStrategy(Wait.forLogMessage(/database system is ready to accept connections/, 2))
      .start();
    return `postgres://postgres@${container.getHost()}:${container.getMappedPort(5432)}/postgres`;
  }
  // Not durable: fsync and friends off. Every database here is dropped with the test process,
  // so surviving an OS crash buys nothing and a commit that waits for the disk slows every test.
  return (await startLocalPostgres({ durable: false })).url;
}
