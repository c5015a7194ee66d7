// CPU seconds a process has used, read from /proc (Linux): for a benchmark's "CPU per turn per
// process". A Postgres server is one postmaster and a process per connection and per background
// worker, so its figure as a whole is the postmaster's own time, the time of its children that
// have exited (the kernel adds it to the parent once it reaps them) and the time of those still
// running; one database's share is the time of its backends and the background processes.
import { readdir, readFile } from 'node:fs/promises';
import type { Pool } from 'pg';

/** Clock ticks a second of /proc/<pid>/stat (USER_HZ, 100 on every Linux this runs on). */
const TICKS = 100;

interface Stat {
  ppid: number;
  /** utime + stime, in ticks. */
  own: number;
  /** cutime + cstime: children that have exited and been waited for, in ticks. */
  reaped: number;
}

async function stat(pid: number): Promise<Stat | undefined> {
  let text: string;
  try {
    text = await readFile(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return undefined; // gone, or not Linux
  }
  // The command name (field 2) is in parentheses and may hold spaces: split after its end.
  const fields = text.slice(text.lastIndexOf(')') + 2).split(' ');
  const n = (i: number) => Number(fields[i - 3]);
  return { ppid: n(4), own: n(14) + n(15), reaped: n(16) + n(17) };
}

/** CPU seconds of one process so far (0 when it cannot be read). */
export async function processCpuSeconds(pid: number): Promise<number> {
  const s = await stat(pid);
  return s === undefined ? 0 : s.own / TICKS;
}

/** CPU seconds of a process and all its children, living or exited. */
export async function treeCpuSeconds(pid: number): Promise<number> {
  const root = await stat(pid);
  if (root === undefined) return 0;
  let ticks = root.own + root.reaped;
  const pids = (await readdir('/proc')).filter((d) => /^\d+$/.test(d)).map(Number);
  for (const p of pids) {
    const s = await stat(p);
    if (s?.ppid === pid) ticks += s.own;
  }
  return ticks / TICKS;
}

/**
 * CPU seconds of one database's share of a Postgres server: the backends connected to it, the
 * postmaster and the server's background processes (WAL writer, checkpointer, ...: shared with
 * the server's other databases, so a busy neighbour adds a little). The backends of other
 * databases are left out (tests of other checkouts share the server a bench runs on: counted,
 * they would make the server's figure per turn depend on what else ran meanwhile), and so is the
 * time of backends that exited, which the kernel books to the postmaster with no name (the
 * services' pools keep their connections over a measurement).
 */
export async function databaseCpuSeconds(postmaster: number, database: string): Promise<number> {
  const root = await stat(postmaster);
  if (root === undefined) return 0;
  let ticks = root.own;
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const s = await stat(Number(d));
    if (s?.ppid !== postmaster) continue;
    // A backend's title names its user, database and client: `postgres: <user> <db> host(port) ...`.
    const title = (await readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '')).replaceAll(
      '\0',
      ' ',
    );
    const backend = /\(\d+\)|\[local\]/.test(title);
    if (!backend || title.split(/\s+/).includes(database)) ticks += s.own;
  }
  return ticks / TICKS;
}

/** The postmaster of the server a pool talks to: the parent of its backend (same machine only). */
export async function postmasterPid(pool: Pool): Promise<number | undefined> {
  const { rows } = await pool.query<{ pid: number }>('SELECT pg_backend_pid() AS pid');
  const backend = rows[0]?.pid;
  return backend === undefined ? undefined : (await stat(backend))?.ppid;
}

/** The pid of the process listening as `nats-server ... -p <port>` (the one `pnpm bench` starts). */
export async function natsServerPid(url: string): Promise<number | undefined> {
  const port = new URL(url).port;
  for (const d of await readdir('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    const cmd = await readFile(`/proc/${d}/cmdline`, 'utf8').catch(() => '');
    const args = cmd.split('\0');
    if (args[0]?.endsWith('nats-server') && args[args.indexOf('-p') + 1] === port) return Number(d);
  }
  return undefined;
}

/**
 * Samples named processes; `since()` returns each one's CPU seconds since the sample, divided
 * by `per` (rounded to a tenth of a millisecond when given as milliseconds per turn).
 */
export function cpuMeter(processes: Record<string, () => Promise<number>>) {
  const sample = async () =>
    Object.fromEntries(
      await Promise.all(Object.entries(processes).map(async ([k, f]) => [k, await f()] as const)),
    );
  return {
    start: async () => {
      const before = await sample();
      return {
        /** Milliseconds of CPU per operation, by process, over `ops` operations. */
        msPer: async (ops: number) => {
          const after = await sample();
          const out: Record<string, number> = {};
          let total = 0;
          for (const [k, v] of Object.entries(after)) {
            const ms = ((v - (before[k] ?? 0)) * 1000) / ops;
            out[k] = Math.round(ms * 10) / 10;
            total += ms;
          }
          out['total'] = Math.round(total * 10) / 10;
          return out;
        },
      };
    },
  };
}
