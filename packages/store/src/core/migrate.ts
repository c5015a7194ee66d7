// Schema migrations: numbered SQL files (`NNNN_name.sql`) applied in order, each in its own
// transaction, recorded in public.schema_migrations with the sha256 of the file. Every
// migrator takes one advisory lock first, so several instances starting at once apply each
// file exactly once; the others wait and then find nothing left to do.
import { createHash } from 'node:crypto';
import { readdir, readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Client, escapeIdentifier } from 'pg';
import type { DatabaseError, Pool, PoolClient } from 'pg';
import type { Logger } from 'pino';

/** The folder of this package's migrations. */
export const MIGRATIONS_DIR = join(import.meta.dirname, '..', '..', 'migrations');

// Arbitrary but fixed: every toolmesh migrator must contend for the same lock.
const LOCK_KEY = 7_211_305_417;
const FILE_PATTERN = /^(\d{4})_([a-z0-9_]+)\.sql$/;

export const MigrationErrorCode = {
  /** A file in the migrations folder is misnamed or repeats a version number. */
  invalid_migration: 'invalid_migration',
  /** An applied migration's file has changed since it was applied. */
  checksum_mismatch: 'checksum_mismatch',
  /** Postgres rejected a migration; its transaction was rolled back. */
  migration_failed: 'migration_failed',
} as const;
export type MigrationErrorCode = (typeof MigrationErrorCode)[keyof typeof MigrationErrorCode];

export class MigrationError extends Error {
  readonly code: MigrationErrorCode;
  /** The migration file at fault, when there is one. */
  readonly file: string | undefined;
  constructor(
    code: MigrationErrorCode,
    message: string,
    options: { file?: string; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'MigrationError';
    this.code = code;
    this.file = options.file;
  }
}

export interface Migration {
  readonly version: number;
  readonly name: string;
  /** The file name, e.g. `0001_init.sql`. */
  readonly file: string;
  readonly sql: string;
  readonly checksum: string;
}

export interface MigrateOptions {
  pool: Pool;
  /** Folder of `NNNN_name.sql` files; this package's migrations by default. */
  dir?: string;
  logger: Logger;
}

/** Reads and checks the migration files of a folder, sorted by version. */
export async function loadMigrations(dir: string = MIGRATIONS_DIR): Promise<Migration[]> {
  const files = (await readdir(dir)).filter((f) => f.endsWith('.sql')).sort();
  const migrations: Migration[] = [];
  for (const file of files) {
    const match = FILE_PATTERN.exec(file);
    if (match === null) {
      // A misnamed file would otherwise be skipped silently and its schema never created.
      throw new MigrationError(
        'invalid_migration',
        `${file}: migration files are named NNNN_name.sql (four digits, lower-case name)`,
        { file },
      );
    }
    const version = Number(match[1]);
    const previous = migrations.find((m) => m.version === version);
    if (previous !== undefined) {
      throw new MigrationError(
        'invalid_migration',
        `${file} and ${previous.file} share version ${version}`,
        {
          file,
        },
      );
    }
    const sql = await readFile(join(dir, file), 'utf8');
    const checksum = createHash('sha256').update(sql).digest('hex');
    migrations.push({ version, name: match[2] ?? '', file, sql, checksum });
  }
  return migrations;
}

/** Applies every migration not applied yet; returns the files it applied, in order. */
export async function migrate(options: MigrateOptions): Promise<{ applied: string[] }> {
  const log = options.logger.child({ component: 'migrate' });
  const migrations = await loadMigrations(options.dir);
  const client = await options.pool.connect();
  try {
    // A migration (an index build) or the wait for another migrator may outlast the pool's
    // statement timeout. The client is destroyed afterwards, so the setting goes with it.
    await client.query('SET statement_timeout = 0');
    await lock(client, log);
    await client.query(`CREATE TABLE IF NOT EXISTS public.schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      checksum   text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT now()
    )`);
    const applied = await appliedChecksums(client);
    verify(migrations, applied, log);
    const done: string[] = [];
    for (const m of migrations) {
      if (applied.has(m.version)) continue;
      await apply(client, m, log);
      done.push(m.file);
    }
    log.info({ applied: done, total: migrations.length }, 'migrations up to date');
    return { applied: done };
  } finally {
    // Destroying the connection ends the session, which releases the advisory lock and drops
    // the session setting; returning it to the pool would keep both (and, after a lost
    // connection, an unlock query would only fail and hide the real error).
    client.release(true);
  }
}

async function lock(client: PoolClient, log: Logger): Promise<void> {
  const tried = await client.query<{ ok: boolean }>('SELECT pg_try_advisory_lock($1) AS ok', [
    LOCK_KEY,
  ]);
  if (tried.rows[0]?.ok === true) return;
  log.info('another migrator holds the migration lock; waiting for it');
  await client.query('SELECT pg_advisory_lock($1)', [LOCK_KEY]);
}

async function appliedChecksums(client: PoolClient): Promise<Map<number, string>> {
  const result = await client.query<{ version: number; checksum: string }>(
    'SELECT version, checksum FROM public.schema_migrations',
  );
  return new Map(result.rows.map((r) => [r.version, r.checksum]));
}

// Checked before anything is applied, so a tampered history stops the run before it changes
// the schema any further.
function verify(migrations: Migration[], applied: Map<number, string>, log: Logger): void {
  for (const m of migrations) {
    const checksum = applied.get(m.version);
    if (checksum !== undefined && checksum !== m.checksum) {
      throw new MigrationError(
        'checksum_mismatch',
        `${m.file} was changed after it was applied (sha256 ${m.checksum}, applied ${checksum}); ` +
          'add a new migration instead of editing an applied one',
        { file: m.file },
      );
    }
  }
  const known = new Set(migrations.map((m) => m.version));
  const unknown = [...applied.keys()].filter((v) => !known.has(v));
  if (unknown.length > 0) {
    // The database is ahead of this code (a rollback of a deploy); not fatal, but worth seeing.
    log.warn({ versions: unknown }, 'the database has migrations this code does not know');
  }
}

async function apply(client: PoolClient, m: Migration, log: Logger): Promise<void> {
  const started = performance.now();
  try {
    await client.query('BEGIN');
    // No parameters: the simple query protocol runs a file of many statements in one go.
    await client.query(m.sql);
    await client.query(
      'INSERT INTO public.schema_migrations (version, name, checksum) VALUES ($1, $2, $3)',
      [m.version, m.name, m.checksum],
    );
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw new MigrationError(
      'migration_failed',
      `${m.file} failed and was rolled back: ${describe(err, m.sql)}`,
      {
        file: m.file,
        cause: err,
      },
    );
  }
  log.info({ file: m.file, ms: Math.round(performance.now() - started) }, 'applied migration');
}

function describe(err: unknown, sql: string): string {
  if (!(err instanceof Error)) return String(err);
  const pgErr = err as Partial<DatabaseError>;
  const parts = [err.message];
  if (pgErr.code !== undefined) parts.push(`(SQLSTATE ${pgErr.code})`);
  const position = Number(pgErr.position);
  if (Number.isInteger(position) && position > 0) {
    parts.push(`at line ${sql.slice(0, position - 1).split('\n').length}`);
  }
  return parts.join(' ');
}

export interface EnsureDatabaseOptions {
  url: string;
  connectTimeoutMs?: number;
  logger: Logger;
}

/**
 * Creates the database named in `url` when it does not exist, connecting to the `postgres`
 * database of the same server to do so. Returns whether it created it.
 */
export async function ensureDatabase(options: EnsureDatabaseOptions): Promise<boolean> {
  const connectionTimeoutMillis = options.connectTimeoutMs ?? 10_000;
  // Try the database itself first: a role may own its database yet be barred from `postgres`.
  const probe = new Client({ connectionString: options.url, connectionTimeoutMillis });
  try {
    await probe.connect();
    return false;
  } catch (err) {
    if ((err as { code?: unknown }).code !== '3D000') throw err; // invalid_catalog_name
  } finally {
    await probe.end().catch(() => undefined);
  }
  const target = new URL(options.url);
  const database = decodeURIComponent(target.pathname.slice(1));
  if (database === '') throw new Error('the database URL names no database to create');
  const admin = new URL(options.url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.href, connectionTimeoutMillis });
  await client.connect();
  try {
    await client.query(`CREATE DATABASE ${escapeIdentifier(database)}`);
    options.logger.info({ database }, 'created database');
    return true;
  } catch (err) {
    // Another process created it between our probe and now.
    if ((err as { code?: unknown }).code === '42P04') return false;
    throw err;
  } finally {
    await client.end();
  }
}
