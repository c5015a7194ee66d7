// Process-count limits through the pids cgroup controller.
//
// RLIMIT_NPROC does not work for us when the service runs as root: the kernel exempts uid 0
// (INIT_USER) from it, and root inside bubblewrap's user namespace is still uid 0 on the host.
// A pids cgroup counts every process of one command, whoever runs it, and lists them all, so
// a timeout can kill the whole tree by pid even if something escaped the process group. Each
// command gets `<base>/<sandbox id>/<call id>`; the host-side launcher moves itself into it
// before it execs bwrap, so no child is ever outside it.
import { readFile, mkdir, rmdir, writeFile, readdir } from 'node:fs/promises';
import { join } from 'node:path';

export interface PidsCgroups {
  /** The directory holding one child cgroup per sandbox. */
  readonly base: string;
  /** Creates the cgroup of one command, capped at `max` processes; returns its directory. */
  create(sandboxId: string, callId: string, max: number): Promise<string>;
  /** Kills every process in a command's cgroup (or, with no call id, the whole sandbox's). */
  kill(sandboxId: string, callId?: string): Promise<void>;
  /** Removes a command's cgroup once empty; the sandbox's too when `callId` is omitted. */
  remove(sandboxId: string, callId?: string): Promise<void>;
  /** How many times commands hit the cap (pids.events `max`), for the result. */
  limitHits(dir: string): Promise<number>;
}

/**
 * Finds a pids controller this process may create cgroups in: cgroup v1's `pids` hierarchy or a
 * cgroup2 mount where `pids` is enabled for our subtree. Undefined when there is none (then
 * only RLIMIT_NPROC is left, which binds non-root users only).
 */
export async function probePidsCgroups(
  name = 'toolmesh-sandbox',
): Promise<PidsCgroups | undefined> {
  const [mountinfo, own] = await Promise.all([
    readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
  ]);
  for (const candidate of candidates(mountinfo, own)) {
    const base = join(candidate, name);
    try {
      await mkdir(base, { recursive: true });
      // A v2 child only gets pids.max when the parent delegates the controller to it.
      const probe = join(base, `probe-${process.pid}`);
      await mkdir(probe, { recursive: true });
      try {
        await writeFile(join(probe, 'pids.max'), '1');
      } finally {
        await rmdir(probe).catch(() => undefined);
      }
      return pidsCgroups(base);
    } catch {
      continue;
    }
  }
  return undefined;
}

function candidates(mountinfo: string, own: string): string[] {
  const ownPath = (match: (controllers: string) => boolean): string | undefined => {
    for (const line of own.split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers !== undefined && path !== undefined && match(controllers)) return path;
    }
    return undefined;
  };
  const out: string[] = [];
  for (const line of mountinfo.split('\n')) {
    // mountinfo: id parent major:minor root mountpoint options ... - fstype source superoptions
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const mountpoint = left.split(' ')[4];
    const [fstype, , superOptions = ''] = right.split(' ');
    if (mountpoint === undefined) continue;
    if (fstype === 'cgroup' && superOptions.split(',').includes('pids')) {
      const path = ownPath((c) => c.split(',').includes('pids'));
      if (path !== undefined) out.push(join(mountpoint, path));
    } else if (fstype === 'cgroup2') {
      const path = ownPath((c) => c === '');
      if (path !== undefined) out.push(join(mountpoint, path));
    }
  }
  return out;
}

function pidsCgroups(base: string): PidsCgroups {
  const dirOf = (sandboxId: string, callId?: string): string =>
    callId === undefined ? join(base, sandboxId) : join(base, sandboxId, callId);

  async function pidsIn(dir: string): Promise<number[]> {
    const text = await readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => '');
    return text
      .split('\n')
      .filter((line) => line !== '')
      .map(Number);
  }

  async function killDir(dir: string): Promise<void> {
    // Kill until empty: a process may fork between the read and the kill. The cap on processes
    // bounds how often that can happen.
    for (let round = 0; round < 50; round++) {
      const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
      for (const child of children) {
        if (child.isDirectory()) await killDir(join(dir, child.name));
      }
      const pids = await pidsIn(dir);
      if (pids.length === 0) return;
      for (const pid of pids) {
        try {
          process.kill(pid, 'SIGKILL');
        } catch {
          // Gone already.
        }
      }
      await new Promise((resolve) => setTimeout(resolve, round < 5 ? 5 : 20));
    }
  }

  async function removeDir(dir: string): Promise<void> {
    const children = await readdir(dir, { withFileTypes: true }).catch(() => []);
    for (const child of children) {
      if (child.isDirectory()) await removeDir(join(dir, child.name));
    }
    // EBUSY while a killed process is still being reaped: try a few times.
    for (let attempt = 0; attempt < 20; attempt++) {
      try {
        await rmdir(dir);
        return;
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOENT') return;
        if (code !== 'EBUSY') throw err;
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    }
  }

  return {
    base,
    async create(sandboxId, callId, max) {
      const dir = dirOf(sandboxId, callId);
      await mkdir(dir, { recursive: true });
      await writeFile(join(dir, 'pids.max'), String(max));
      return dir;
    },
    kill: (sandboxId, callId) => killDir(dirOf(sandboxId, callId)),
    remove: (sandboxId, callId) => removeDir(dirOf(sandboxId, callId)),
    async limitHits(dir) {
      const events = await readFile(join(dir, 'pids.events'), 'utf8').catch(() => '');
      const match = /^max (\d+)$/m.exec(events);
      return match ? Number(match[1]) : 0;
    },
  };
}
