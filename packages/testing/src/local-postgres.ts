// A Postgres server run from the local binaries (initdb + pg_ctl): for tests when no Docker
// engine is around, for fault tests that stop the database for a while, and for `pnpm stack`.
// The server lives as long as the process that started it.
import { spawnSync } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import {
  appendFile,
  chown,
  mkdir,
  mkdtemp,
  readdir,
  readFile,
  rm,
  writeFile,
} from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from './ports.ts';
import { asPostgresUser, findExecutable, isRoot, onExit, run } from './processes.ts';

export interface LocalPostgresOptions {
  /** Folder for the cluster, its log and its socket, kept by `close()`; a temporary one by default. */
  dir?: string;
  /** TCP port on 127.0.0.1; a free one by default. */
  port?: number;
  startTimeoutMs?: number;
  /**
   * fsync, synchronous_commit and full_page_writes on (true, the default): a committed
   * transaction survives an OS crash or a power loss. The test fixture turns them off for speed,
   * since its databases are thrown away with the process anyway.
   */
  durable?: boolean;
}

export interface LocalPostgres {
  /** `postgres://postgres@127.0.0.1:<port>/postgres` (trust auth). */
  readonly url: string;
  readonly port: number;
  readonly dir: string;
  /** Starts the server again after `stop()`, on the same port and data. */
  start(): Promise<void>;
  /** Fast shutdown: open connections are cut, the data stays. */
  stop(): Promise<void>;
  /** Stops the server and removes the folder if this module created it. */
  close(): Promise<void>;
}

export async function startLocalPostgres(
  options: LocalPostgresOptions = {},
): Promise<LocalPostgres> {
  const bindir = await findBinDir();
  const pgCtl = join(bindir, 'pg_ctl');
  const created = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'toolmesh-pg-')));
  const data = join(dir, 'data');
  const logFile = join(dir, 'postgres.log');
  const timeoutSec = Math.ceil((options.startTimeoutMs ?? 60_000) / 1000);
  let port = options.port ?? (await freePort());
  let running = false;
  // On the command line at every start rather than in postgresql.conf at initdb: the command
  // line wins over both configuration files, so a data folder made by an older version (which
  // wrote `fsync = off` and friends into postgresql.conf) comes up durable too.
  const durable = options.durable ?? true;
  const durability = ['fsync', 'synchronous_commit', 'full_page_writes'].map(
    (name) => `${name}=${durable ? 'on' : 'off'}`,
  );

  const pg = (args: readonly string[], timeoutMs = timeoutSec * 1000 + 5_000): Promise<string> => {
    const [command, all] = asPostgresUser(pgCtl, args);
    // cwd: the postgres user may not be allowed into ours, and initdb/pg_ctl insist on one.
    return run(command, all, { cwd: dir, timeoutMs });
  };
  // Synchronous because it runs in process.on('exit'). A folder we are about to remove needs
  // no checkpoint; a kept one gets a clean shutdown.
  const unregister = onExit(() => {
    if (running) {
      const mode = created ? 'immediate' : 'fast';
      const [command, args] = asPostgresUser(pgCtl, ['stop', '-D', data, '-m', mode, '-w']);
      spawnSync(command, args, { cwd: dir, stdio: 'ignore', timeout: 15_000 });
    }
    if (created) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  try {
    await mkdir(dir, { recursive: true });
    if (isRoot()) {
      await chownToPostgres(dir);
      await run('runuser', ['-u', 'postgres', '--', 'test', '-w', dir]).catch((err: unknown) => {
        throw new Error(
          `the postgres OS user cannot write to ${dir}: every parent folder must be searchable (o+x) by it`,
          { cause: err },
        );
      });
    }
    if (!existsSync(join(data, 'PG_VERSION'))) {
      await initCluster(bindir, dir, data, durable);
    }
    // A server left behind by a process that was killed (say `pnpm stack` under SIGKILL)
    // still holds the data folder; stop it rather than fail to start.
    if (await isRunning(pg, data)) await pg(['stop', '-D', data, '-m', 'fast', '-w']);
    if (durable) await dropNoSyncSettings(bindir, dir, data);
    for (let attempt = 1; ; attempt++) {
      try {
        await start();
        break;
      } catch (err) {
        // freePort's port can be taken before Postgres binds it; pick another then.
        const portTaken =
          err instanceof Error && /could not bind|address already in use/i.test(err.message);
        if (!portTaken || options.port !== undefined || attempt >= 3) throw err;
        port = await freePort();
      }
    }
  } catch (err) {
    unregister();
    if (created) await rm(dir, { recursive: true, force: true });
    throw err;
  }

  async function start(): Promise<void> {
    if (running) return;
    try {
      await pg([
        'start',
        '-D',
        data,
        '-l',
        logFile,
        '-w',
        '-t',
        String(timeoutSec),
        '-o',
        [`-p ${port}`, ...durability.map((setting) => `-c ${setting}`)].join(' '),
      ]);
    } catch (err) {
      // After a timeout the server may still come up later; never leave it running unowned.
      await pg(['stop', '-D', data, '-m', 'immediate', '-w']).catch(() => undefined);
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(
        `Postgres did not start on port ${port}: ${message}\n--- ${logFile} ---\n${await tail(logFile)}`,
        { cause: err },
      );
    }
    running = true;
  }

  async function stop(): Promise<void> {
    if (!running) return;
    await pg(['stop', '-D', data, '-m', 'fast', '-w', '-t', '60'], 70_000);
    running = false;
  }

  return {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    port,
    dir,
    start,
    stop,
    close: async () => {
      await stop();
      unregister();
      if (created) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

async function initCluster(
  bindir: string,
  dir: string,
  data: string,
  durable: boolean,
): Promise<void> {
  const [command, args] = asPostgresUser(join(bindir, 'initdb'), [
    ...['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C'],
    // --no-sync leaves the new cluster's files in the page cache: fine for a throwaway one.
    ...(durable ? [] : ['--no-sync']),
    '--no-instructions',
  ]);
  await run(command, args, { cwd: dir, timeoutMs: 120_000 });
  const settings = [
    "listen_addresses = '127.0.0.1'",
    // Our own socket folder: the system one (/var/run/postgresql) may be missing or not ours,
    // and a system server on the same port would own the lock file there. A socket path
    // longer than the OS limit (~107 bytes) stops Postgres from starting, so go TCP-only then.
    `unix_socket_directories = '${dir.length > 80 ? '' : dir.replaceAll("'", "''")}'`,
    'max_connections = 200',
  ];
  await appendFile(
    join(data, 'postgresql.conf'),
    `\n# toolmesh local server\n${settings.join('\n')}\n`,
  );
}

/**
 * A data folder made when the local server was not durable has `fsync = off` and friends in its
 * postgresql.conf. The command line overrides them, but they are removed so the file tells the
 * truth, and the folder is flushed to disk once: what was written while fsync was off may still
 * be in the page cache only (Postgres's advice when fsync is turned back on).
 */
async function dropNoSyncSettings(bindir: string, dir: string, data: string): Promise<void> {
  const file = join(data, 'postgresql.conf');
  const text = await readFile(file, 'utf8');
  const kept = text.replace(/^(fsync|synchronous_commit|full_page_writes) = off\n/gm, '');
  if (kept === text) return;
  const [command, args] = asPostgresUser(join(bindir, 'initdb'), ['--sync-only', '-D', data]);
  await run(command, args, { cwd: dir, timeoutMs: 300_000 });
  await writeFile(file, kept);
}

async function isRunning(
  pg: (args: readonly string[]) => Promise<string>,
  data: string,
): Promise<boolean> {
  try {
    await pg(['status', '-D', data]);
    return true;
  } catch {
    return false; // pg_ctl status exits 3 when no server runs
  }
}

async function tail(file: string, lines = 30): Promise<string> {
  try {
    return (await readFile(file, 'utf8')).trimEnd().split('\n').slice(-lines).join('\n');
  } catch {
    return '(no log)';
  }
}

/** The server binaries: `pg_config --bindir`, else the newest /usr/lib/postgresql/<n>/bin. */
async function findBinDir(): Promise<string> {
  const pgConfig = await findExecutable('pg_config');
  if (pgConfig !== undefined) {
    const dir = (await run(pgConfig, ['--bindir']).catch(() => '')).trim();
    // pg_config may come from libpq-dev alone, without a server next to it.
    if (dir !== '' && existsSync(join(dir, 'initdb'))) return dir;
  }
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? await readdir(root) : [];
  versions.sort((a, b) => Number(b) - Number(a));
  for (const v of versions) {
    if (existsSync(join(root, v, 'bin', 'initdb'))) return join(root, v, 'bin');
  }
  throw new Error('PostgreSQL server binaries (initdb, pg_ctl) not found: install postgresql');
}

async function chownToPostgres(dir: string): Promise<void> {
  let ids: string[];
  try {
    ids = await Promise.all([run('id', ['-u', 'postgres']), run('id', ['-g', 'postgres'])]);
  } catch (err) {
    throw new Error('running as root needs a `postgres` OS user to run the server as', {
      cause: err,
    });
  }
  await chown(dir, Number(ids[0]), Number(ids[1]));
}
