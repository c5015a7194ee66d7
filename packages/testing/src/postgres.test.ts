import pg from 'pg';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { usePostgres } from './postgres.ts';
import type { TestPostgres } from './postgres.ts';

async function query<T extends pg.QueryResultRow>(
  url: string,
  sql: string,
  values: unknown[] = [],
): Promise<T[]> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return (await client.query<T>(sql, values)).rows;
  } finally {
    await client.end();
  }
}

function serverUrl(url: string): string {
  const u = new URL(url);
  u.pathname = '/postgres';
  return u.href;
}

async function databaseExists(url: string, database: string): Promise<boolean> {
  const rows = await query(serverUrl(url), 'SELECT 1 FROM pg_database WHERE datname = $1', [
    database,
  ]);
  return rows.length === 1;
}

describe('usePostgres', () => {
  let db: TestPostgres;
  beforeAll(async () => {
    db = await usePostgres();
  });
  afterAll(async () => {
    await db.cleanup();
  });

  it('gives a fresh, empty database of its own', async () => {
    expect(db.database).toMatch(/^t_[0-9a-f]{10}$/);
    const [row] = await query<{ db: string }>(db.url, 'SELECT current_database() AS db');
    expect(row?.db).toBe(db.database);
    const tables = await query(
      db.url,
      "SELECT table_name FROM information_schema.tables WHERE table_schema NOT IN ('pg_catalog', 'information_schema')",
    );
    expect(tables).toEqual([]);
    await query(db.url, 'CREATE TABLE t (id int)');
  });

  it('gives every call a different database on the same server', async () => {
    const other = await usePostgres();
    expect(other.database).not.toBe(db.database);
    expect(serverUrl(other.url)).toBe(serverUrl(db.url));
    // The table made in the first database is not visible here.
    expect(
      await query(other.url, "SELECT 1 FROM information_schema.tables WHERE table_name = 't'"),
    ).toEqual([]);
    await other.cleanup();
  });

  it('cleanup drops the database even with a connection still open', async () => {
    const doomed = await usePostgres();
    const client = new pg.Client({ connectionString: doomed.url });
    client.on('error', () => undefined); // the forced drop terminates this connection
    await client.connect();
    await client.query('SELECT 1');

    await doomed.cleanup();
    await doomed.cleanup(); // twice is harmless

    expect(await databaseExists(db.url, doomed.database)).toBe(false);
    await expect(client.query('SELECT 1')).rejects.toThrow();
    await client.end().catch(() => undefined);
  });

  it('uses the server DATABASE_URL names', async () => {
    const saved = process.env['DATABASE_URL'];
    process.env['DATABASE_URL'] = serverUrl(db.url);
    try {
      const viaEnv = await usePostgres();
      expect(serverUrl(viaEnv.url)).toBe(serverUrl(db.url));
      expect(await databaseExists(db.url, viaEnv.database)).toBe(true);
      await viaEnv.cleanup();
      expect(await databaseExists(db.url, viaEnv.database)).toBe(false);
    } finally {
      if (saved === undefined) delete process.env['DATABASE_URL'];
      else process.env['DATABASE_URL'] = saved;
    }
  });
});
