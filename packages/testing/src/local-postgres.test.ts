import { existsSync } from 'node:fs';
import { appendFile, chmod, mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import pg from 'pg';
import { afterAll, describe, expect, it } from 'vitest';
import { startLocalPostgres } from './local-postgres.ts';
import type { LocalPostgres } from './local-postgres.ts';

async function query<T extends pg.QueryResultRow>(url: string, sql: string): Promise<T[]> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2_000 });
  await client.connect();
  try {
    return (await client.query<T>(sql)).rows;
  } finally {
    await client.end();
  }
}

describe('startLocalPostgres', () => {
  const servers: LocalPostgres[] = [];
  const folders: string[] = [];
  afterAll(async () => {
    for (const s of servers) await s.close();
    for (const f of folders) await rm(f, { recursive: true, force: true });
  });

  it('can be stopped and started again, keeping its data', async () => {
    const server = await startLocalPostgres();
    servers.push(server);
    expect(server.url).toBe(`postgres://postgres@127.0.0.1:${server.port}/postgres`);
    await query(server.url, 'CREATE TABLE kept (id int); INSERT INTO kept VALUES (42)');

    await server.stop();
    await expect(query(server.url, 'SELECT 1')).rejects.toThrow(/ECONNREFUSED/);

    await server.start();
    expect(await query<{ id: number }>(server.url, 'SELECT id FROM kept')).toEqual([{ id: 42 }]);

    await server.close();
    expect(existsSync(server.dir)).toBe(false);
  });

  it('cuts open connections when stopped, and a new connection works after start', async () => {
    const server = await startLocalPostgres();
    servers.push(server);
    const client = new pg.Client({ connectionString: server.url });
    client.on('error', () => undefined); // the cut connection reports here as well
    await client.connect();
    await server.stop();
    await expect(client.query('SELECT 1')).rejects.toThrow();
    await client.end().catch(() => undefined);
    await server.start();
    expect(await query<{ n: number }>(server.url, 'SELECT 1 AS n')).toEqual([{ n: 1 }]);
  });

  it('keeps a given folder on close and reuses its cluster next time', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'toolmesh-pg-test-'));
    folders.push(parent);
    // mkdtemp makes a private folder; the server may run as another OS user (when we are root).
    await chmod(parent, 0o755);
    const dir = join(parent, 'cluster');
    const first = await startLocalPostgres({ dir });
    await query(first.url, 'CREATE DATABASE survivor');
    await first.close();
    expect(existsSync(join(dir, 'data', 'PG_VERSION'))).toBe(true);

    const second = await startLocalPostgres({ dir });
    servers.push(second);
    const rows = await query<{ datname: string }>(
      second.url,
      "SELECT datname FROM pg_database WHERE datname = 'survivor'",
    );
    expect(rows).toEqual([{ datname: 'survivor' }]);
  });

  it('is durable by default, as `pnpm stack` runs it: fsync, synchronous_commit, full_page_writes on', async () => {
    const server = await startLocalPostgres();
    servers.push(server);
    expect(await durability(server.url)).toEqual({
      fsync: 'on',
      synchronous_commit: 'on',
      full_page_writes: 'on',
    });
  });

  it('turns them off only when asked (the test fixture)', async () => {
    const server = await startLocalPostgres({ durable: false });
    servers.push(server);
    expect(await durability(server.url)).toEqual({
      fsync: 'off',
      synchronous_commit: 'off',
      full_page_writes: 'off',
    });
  });

  it('brings a data folder made without fsync back up durable, and cleans its postgresql.conf', async () => {
    const parent = await mkdtemp(join(tmpdir(), 'toolmesh-pg-test-'));
    folders.push(parent);
    await chmod(parent, 0o755);
    const dir = join(parent, 'cluster');
    const first = await startLocalPostgres({ dir, durable: false });
    await query(first.url, 'CREATE TABLE kept (id int); INSERT INTO kept VALUES (7)');
    await first.close();
    // What an older version wrote at initdb, and what ALTER SYSTEM would write.
    const conf = join(dir, 'data', 'postgresql.conf');
    const off = 'fsync = off\nsynchronous_commit = off\nfull_page_writes = off\n';
    await appendFile(conf, off);
    await appendFile(join(dir, 'data', 'postgresql.auto.conf'), off);

    const second = await startLocalPostgres({ dir });
    servers.push(second);
    expect(await durability(second.url)).toEqual({
      fsync: 'on',
      synchronous_commit: 'on',
      full_page_writes: 'on',
    });
    expect(await query<{ id: number }>(second.url, 'SELECT id FROM kept')).toEqual([{ id: 7 }]);
    expect(await readFile(conf, 'utf8')).not.toMatch(/^fsync = off/m);
  });
});

async function durability(url: string): Promise<Record<string, string>> {
  const rows = await query<{ name: string; setting: string }>(
    url,
    `SELECT name, setting FROM pg_settings
      WHERE name IN ('fsync', 'synchronous_commit', 'full_page_writes') ORDER BY name`,
  );
  return Object.fromEntries(rows.map((r) => [r.name, r.setting]));
}
