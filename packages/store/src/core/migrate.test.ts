import { createHash } from 'node:crypto';
import { readdir, readFile, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { usePostgres } from '@toolmesh/testing';
import type { TestPostgres } from '@toolmesh/testing';
import type { Pool } from 'pg';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { ensureDatabase, migrate, MIGRATIONS_DIR, MigrationError } from './migrate.ts';
import { createPool } from './pool.ts';

const logger = pino({ level: 'silent' });

describe('migrate', () => {
  let db: TestPostgres;
  let dir: string;
  const pools: Pool[] = [];

  const pool = (): Pool => {
    const p = createPool({
      url: db.url,
      max: 4,
      statementTimeoutMs: 5_000,
      connectTimeoutMs: 5_000,
      logger,
    });
    pools.push(p);
    return p;
  };
  const rows = async <T>(sql: string): Promise<T[]> => (await pool().query(sql)).rows as T[];
  const write = (file: string, sql: string): Promise<void> => writeFile(join(dir, file), sql);
  const tables = async (): Promise<string[]> =>
    (
      await rows<{ t: string }>(
        "SELECT table_schema || '.' || table_name AS t FROM information_schema.tables " +
          "WHERE table_schema IN ('public', 'state', 'resource') ORDER BY 1",
      )
    ).map((r) => r.t);

  beforeEach(async () => {
    db = await usePostgres();
    dir = await mkdtemp(join(tmpdir(), 'toolmesh-migrations-'));
  });
  afterEach(async () => {
    await Promise.all(pools.splice(0).map((p) => p.end()));
    await db.cleanup();
    await rm(dir, { recursive: true, force: true });
  });

  it("applies this package's migrations once, recording each with its checksum", async () => {
    const files = (await readdir(MIGRATIONS_DIR)).filter((f) => /^\d{4}_.+\.sql$/.test(f)).sort();
    expect(files[0]).toBe('0001_init.sql');
    const first = await migrate({ pool: pool(), logger });
    expect(first.applied).toEqual(files);
    expect(await tables()).toEqual(
      expect.arrayContaining(['public.cards', 'state.tool_executions', 'resource.projects']),
    );

    const recorded = await rows<{
      version: number;
      name: string;
      checksum: string;
      applied_at: Date;
    }>('SELECT version, name, checksum, applied_at FROM public.schema_migrations ORDER BY version');
    const expected = await Promise.all(
      files.map(async (f) => ({
        version: Number(f.slice(0, 4)),
        name: f.slice(5, -4),
        checksum: createHash('sha256')
          .update(await readFile(join(MIGRATIONS_DIR, f), 'utf8'))
          .digest('hex'),
        applied_at: expect.any(Date) as Date,
      })),
    );
    expect(recorded).toEqual(expected);

    const second = await migrate({ pool: pool(), logger });
    expect(second.applied).toEqual([]);
    expect(await rows('SELECT version FROM public.schema_migrations')).toHaveLength(files.length);
  });

  it('applies only the new files on a later run, in version order', async () => {
    await write('0001_a.sql', 'CREATE TABLE a (id int);');
    expect((await migrate({ pool: pool(), dir, logger })).applied).toEqual(['0001_a.sql']);
    await write('0003_c.sql', 'CREATE TABLE c (id int REFERENCES b (id));');
    await write('0002_b.sql', 'CREATE TABLE b (id int PRIMARY KEY);');
    expect((await migrate({ pool: pool(), dir, logger })).applied).toEqual([
      '0002_b.sql',
      '0003_c.sql',
    ]);
    expect(await tables()).toEqual([
      'public.a',
      'public.b',
      'public.c',
      'public.schema_migrations',
    ]);
  });

  it('applies each migration once when two migrators run at the same time', async () => {
    // The sleep keeps the first migrator inside its lock while the second one arrives.
    await write('0001_slow.sql', 'SELECT pg_sleep(0.5); CREATE TABLE slow (id int);');
    await write(
      '0002_counter.sql',
      'CREATE TABLE counter (n int); INSERT INTO counter VALUES (1);',
    );
    const [one, two] = await Promise.all([
      migrate({ pool: pool(), dir, logger }),
      migrate({ pool: pool(), dir, logger }),
    ]);
    expect([...one.applied, ...two.applied].sort()).toEqual(['0001_slow.sql', '0002_counter.sql']);
    // All-or-nothing per migrator: whoever holds the lock applies everything pending.
    expect([one.applied.length, two.applied.length].sort()).toEqual([0, 2]);
    expect(await rows('SELECT n FROM counter')).toEqual([{ n: 1 }]);
  });

  it('rolls a failed migration back and names the file and the Postgres error', async () => {
    await write('0001_ok.sql', 'CREATE TABLE ok (id int);');
    await write(
      '0002_bad.sql',
      'CREATE TABLE half (id int);\nINSERT INTO missing_table VALUES (1);',
    );
    const failure = await migrate({ pool: pool(), dir, logger }).catch((err: unknown) => err);

    expect(failure).toBeInstanceOf(MigrationError);
    const err = failure as MigrationError;
    expect(err.code).toBe('migration_failed');
    expect(err.file).toBe('0002_bad.sql');
    expect(err.message).toContain('0002_bad.sql');
    expect(err.message).toContain('relation "missing_table" does not exist');
    expect(err.message).toContain('line 2');
    // The first file stays applied; nothing of the second one remains.
    expect(await tables()).toEqual(['public.ok', 'public.schema_migrations']);
    expect(await rows('SELECT version FROM public.schema_migrations')).toEqual([{ version: 1 }]);

    await write('0002_bad.sql', 'CREATE TABLE half (id int);');
    expect((await migrate({ pool: pool(), dir, logger })).applied).toEqual(['0002_bad.sql']);
  });

  it('refuses to run when an applied migration was changed, before applying anything', async () => {
    await write('0001_a.sql', 'CREATE TABLE a (id int);');
    await migrate({ pool: pool(), dir, logger });
    await write('0001_a.sql', 'CREATE TABLE a (id bigint);');
    await write('0002_b.sql', 'CREATE TABLE b (id int);');

    const failure = migrate({ pool: pool(), dir, logger });
    await expect(failure).rejects.toThrow(/0001_a\.sql was changed after it was applied/);
    await expect(failure).rejects.toMatchObject({ code: 'checksum_mismatch', file: '0001_a.sql' });
    expect(await tables()).toEqual(['public.a', 'public.schema_migrations']);
  });

  it('rejects misnamed files and repeated versions instead of skipping them', async () => {
    await write('1_a.sql', 'SELECT 1;');
    await expect(migrate({ pool: pool(), dir, logger })).rejects.toMatchObject({
      code: 'invalid_migration',
      file: '1_a.sql',
    });
    await rm(join(dir, '1_a.sql'));
    await write('0001_a.sql', 'SELECT 1;');
    await write('0001_b.sql', 'SELECT 1;');
    await expect(migrate({ pool: pool(), dir, logger })).rejects.toThrow(/share version 1/);
  });
});

describe('ensureDatabase', () => {
  it('creates the database named in the URL once, and leaves an existing one alone', async () => {
    const db = await usePostgres();
    try {
      const url = new URL(db.url);
      url.pathname = `/${db.database}_new`;
      const created = url.href;
      try {
        expect(await ensureDatabase({ url: created, logger })).toBe(true);
        expect(await ensureDatabase({ url: created, logger })).toBe(false);
        expect(await ensureDatabase({ url: db.url, logger })).toBe(false);
      } finally {
        const admin = createPool({
          url: db.url,
          max: 1,
          statementTimeoutMs: 5_000,
          connectTimeoutMs: 5_000,
          logger,
        });
        await admin.query(`DROP DATABASE IF EXISTS "${db.database}_new" WITH (FORCE)`);
        await admin.end();
      }
    } finally {
      await db.cleanup();
    }
  });
});
