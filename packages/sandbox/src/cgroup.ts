// Per-sandbox cgroups: the process cap (pids), memory and CPU.
//
// RLIMIT_NPROC does not work for us when the service runs as root: the kernel exempts uid 0
// (INIT_USER) from it. A pids cgroup counts every process of one command, whoever runs it, and
// lists them all, so a timeout can kill the whole tree by pid even if something escaped the
// process group. Memory and CPU are capped the same way where the controllers can be used:
// the limit is set on the sandbox's cgroup (every command of the sandbox together) and on each
// command's; an out-of-memory kill is counted by the kernel (`oom_kill`), which is how a result
// says `oom` rather than "killed". Where a controller is missing the provider falls back to
// rlimits (RLIMIT_AS, RLIMIT_CPU; see local.ts).
//
// Layout: `<controller root>/<own cgroup>/toolmesh-sandbox/<sandbox id>/<call id>`, in every
// hierarchy that carries one of the controllers (cgroup v1 mounts one per controller; a cgroup2
// mount carries those delegated to us). The host-side launcher moves itself into each before
// it execs bwrap, so no child is ever outside them.
import { access, mkdir, readdir, readFile, rmdir, stat, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { killOutermostFirst, type SandboxProc } from './orphans.ts';
import { readProc } from './proc-proof.ts';

export const CgroupController = { pids: 'pids', memory: 'memory', cpu: 'cpu' } as const;
export type CgroupController = (typeof CgroupController)[keyof typeof CgroupController];

export interface CgroupLimits {
  readonly processes: number;
  /** Memory of the sandbox (and of each command), swap included where it is accounted. */
  readonly memoryBytes?: number;
  /** CPU of the sandbox in percent of one core (100: one core, 200: two). */
  readonly cpuPercent?: number;
}

export interface CommandCgroup {
  /** The `cgroup.procs` files the launcher joins. */
  readonly procs: readonly string[];
  /** The pids directory (pids.max, pids.current). */
  readonly pidsDir: string;
  /** Processes killed by the kernel for memory so far in this command's cgroup. */
  oomKills(): Promise<number>;
}

export interface SandboxCgroups {
  /** The pids hierarchy's `toolmesh-sandbox` folder. */
  readonly base: string;
  /** Controllers in use besides pids. */
  readonly memory: boolean;
  readonly cpu: boolean;
  /** Creates the cgroups of one command (and of its sandbox, the first time). */
  create(sandboxId: string, callId: string, limits: CgroupLimits): Promise<CommandCgroup>;
  /** Kills every process in a command's cgroup (or, with no call id, the whole sandbox's). */
  kill(sandboxId: string, callId?: string): Promise<void>;
  /**
   * Removes a command's cgroups once empty, and the sandbox's when no other command holds one
   * (it is made again, limits and all, by the next command); with no call id, the sandbox's.
   */
  remove(sandboxId: string, callId?: string): Promise<void>;
  /** Removes the `toolmesh-sandbox` folders this process made, where they are empty. */
  release(): Promise<void>;
}

interface Hierarchy {
  /** `<mount>/<own path>/toolmesh-sandbox` */
  readonly base: string;
  readonly version: 1 | 2;
  readonly controllers: Set<CgroupController>;
}

const LIMIT_FILE: Record<CgroupController, { 1: string; 2: string }> = {
  pids: { 1: 'pids.max', 2: 'pids.max' },
  memory: { 1: 'memory.limit_in_bytes', 2: 'memory.max' },
  cpu: { 1: 'cpu.cfs_quota_us', 2: 'cpu.max' },
};

const CPU_PERIOD_US = 100_000;

/**
 * Finds the hierarchies this process may create cgroups in, for pids (required: undefined when
 * there is none, then only RLIMIT_NPROC is left, which binds non-root users only) and for
 * memory and CPU when asked.
 */
export async function probeSandboxCgroups(
  want: { readonly memory?: boolean; readonly cpu?: boolean } = {},
  name = 'toolmesh-sandbox',
): Promise<SandboxCgroups | undefined> {
  const [mountinfo, own] = await Promise.all([
    readFile('/proc/self/mountinfo', 'utf8').catch(() => ''),
    readFile('/proc/self/cgroup', 'utf8').catch(() => ''),
  ]);
  const wanted: CgroupController[] = ['pids'];
  if (want.memory === true) wanted.push('memory');
  if (want.cpu === true) wanted.push('cpu');
  const found = new Map<string, Hierarchy>();
  for (const controller of wanted) {
    for (const candidate of candidates(mountinfo, own, controller)) {
      const base = join(candidate.dir, name);
      if (await usable(base, candidate.version, controller)) {
        const known = found.get(base);
        if (known) known.controllers.add(controller);
        else
          found.set(base, { base, version: candidate.version, controllers: new Set([controller]) });
        break;
      }
    }
  }
  const hierarchies = [...found.values()];
  const pids = hierarchies.find((h) => h.controllers.has('pids'));
  if (pids === undefined) return undefined;
  for (const h of hierarchies) await pruneStale(h.base);
  return sandboxCgroups(hierarchies, pids);
}

/** An empty command cgroup older than this was left by a process that died (SIGKILL). */
const STALE_MS = 60 * 60 * 1000;

/**
 * Removes command cgroups that hold no process and were made long ago, and sandbox cgroups left
 * empty: what a killed service leaves behind (a clean end removes its own). Never a young one: a
 * launcher may be about to join it.
 */
async function pruneStale(base: string): Promise<void> {
  const now = Date.now();
  for (const sandbox of await readdir(base, { withFileTypes: true }).catch(() => [])) {
    if (!sandbox.isDirectory() || !sandbox.name.startsWith('lsb_')) continue;
    const sandboxDir = join(base, sandbox.name);
    for (const call of await readdir(sandboxDir, { withFileTypes: true }).catch(() => [])) {
      if (!call.isDirectory()) continue;
      const dir = join(sandboxDir, call.name);
      const [procs, info] = await Promise.all([
        readFile(join(dir, 'cgroup.procs'), 'utf8').catch(() => 'unknown'),
        stat(dir).catch(() => undefined),
      ]);
      if (procs.trim() !== '' || info === undefined || now - info.mtimeMs < STALE_MS) continue;
      await rmdir(dir).catch(() => undefined);
    }
    // EBUSY while a command cgroup is left in it.
    await rmdir(sandboxDir).catch(() => undefined);
  }
}

/** Can we make a child of `base` and set the controller's limit in it? */
async function usable(
  base: string,
  version: 1 | 2,
  controller: CgroupController,
): Promise<boolean> {
  const probe = join(base, `probe-${process.pid}-${controller}`);
  try {
    await mkdir(base, { recursive: true });
    if (version === 2) await enable(base, controller);
    await mkdir(probe, { recursive: true });
    try {
      await writeFile(
        join(probe, LIMIT_FILE[controller][version]),
        probeValue(controller, version),
      );
      return true;
    } finally {
      await rmdir(probe).catch(() => undefined);
    }
  } catch {
    return false;
  }
}

function probeValue(controller: CgroupController, version: 1 | 2): string {
  switch (controller) {
    case 'pids':
      return '1';
    case 'memory':
      return String(64 * 1024 * 1024);
    case 'cpu':
      return version === 1 ? String(CPU_PERIOD_US) : `${CPU_PERIOD_US} ${CPU_PERIOD_US}`;
    default: {
      const never: never = controller;
      throw new Error(`unknown controller ${String(never)}`);
    }
  }
}

/** cgroup2: a controller reaches a child only when its parent lists it in subtree_control. */
async function enable(dir: string, controller: CgroupController): Promise<void> {
  await writeFile(join(dir, 'cgroup.subtree_control'), `+${controller}`).catch(() => undefined);
}

function candidates(
  mountinfo: string,
  own: string,
  controller: CgroupController,
): { dir: string; version: 1 | 2 }[] {
  const ownPath = (match: (controllers: string) => boolean): string | undefined => {
    for (const line of own.split('\n')) {
      const [, controllers, path] = line.split(':');
      if (controllers !== undefined && path !== undefined && match(controllers)) return path;
    }
    return undefined;
  };
  const out: { dir: string; version: 1 | 2 }[] = [];
  for (const line of mountinfo.split('\n')) {
    // mountinfo: id parent major:minor root mountpoint options ... - fstype source superoptions
    const [left, right] = line.split(' - ');
    if (left === undefined || right === undefined) continue;
    const mountpoint = left.split(' ')[4];
    const [fstype, , superOptions = ''] = right.split(' ');
    if (mountpoint === undefined) continue;
    if (fstype === 'cgroup' && superOptions.split(',').includes(controller)) {
      const path = ownPath((c) => c.split(',').includes(controller));
      if (path !== undefined) out.push({ dir: join(mountpoint, path), version: 1 });
    } else if (fstype === 'cgroup2') {
      const path = ownPath((c) => c === '');
      if (path !== undefined) out.push({ dir: join(mountpoint, path), version: 2 });
    }
  }
  return out;
}

function sandboxCgroups(hierarchies: readonly Hierarchy[], pids: Hierarchy): SandboxCgroups {
  const dirOf = (h: Hierarchy, sandboxId: string, callId?: string): string =>
    callId === undefined ? join(h.base, sandboxId) : join(h.base, sandboxId, callId);
  const memory = hierarchies.find((h) => h.controllers.has('memory'));
  const cpu = hierarchies.find((h) => h.controllers.has('cpu'));

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
      const found = await pidsIn(dir);
      if (found.length === 0) return;
      // cgroup.procs lists by pid, and after a pid wrap a namespace's init comes before the
      // bwrap that leads it: leaders die first, or they exit with a status instead of SIGKILL.
      const procs = await Promise.all(
        found.map(async (pid) => ({ pid, info: await readProc(pid) })),
      );
      killOutermostFirst(procs.filter((p): p is SandboxProc => p.info !== undefined));
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

  async function setLimits(h: Hierarchy, dir: string, limits: CgroupLimits): Promise<void> {
    const set = (file: string, value: string) => writeFile(join(dir, file), value);
    if (h.version === 2) {
      for (const c of h.controllers) await enable(dir, c);
    }
    if (h.controllers.has('memory') && limits.memoryBytes !== undefined) {
      const bytes = String(limits.memoryBytes);
      if (h.version === 1) {
        await set('memory.limit_in_bytes', bytes);
        // With swap accounting, memory + swap; without it the file is absent.
        const memsw = join(dir, 'memory.memsw.limit_in_bytes');
        if (await exists(memsw)) await writeFile(memsw, bytes);
      } else {
        await set('memory.max', bytes);
        await set('memory.swap.max', '0').catch(() => undefined);
      }
    }
    if (h.controllers.has('cpu') && limits.cpuPercent !== undefined) {
      const quota = String(Math.max(1000, Math.round((CPU_PERIOD_US * limits.cpuPercent) / 100)));
      if (h.version === 1) {
        await set('cpu.cfs_period_us', String(CPU_PERIOD_US));
        await set('cpu.cfs_quota_us', quota);
      } else {
        await set('cpu.max', `${quota} ${CPU_PERIOD_US}`);
      }
    }
  }

  return {
    base: pids.base,
    memory: memory !== undefined,
    cpu: cpu !== undefined,
    async create(sandboxId, callId, limits) {
      const procs: string[] = [];
      let pidsDir = '';
      for (const h of hierarchies) {
        const dir = dirOf(h, sandboxId, callId);
        // Another command's end may remove the sandbox's folder between our two mkdirs.
        for (let attempt = 0; ; attempt++) {
          try {
            const sandboxDir = dirOf(h, sandboxId);
            const fresh = !(await exists(sandboxDir));
            await mkdir(sandboxDir, { recursive: true });
            if (fresh) await setLimits(h, sandboxDir, limits);
            await mkdir(dir);
            break;
          } catch (err) {
            const code = (err as NodeJS.ErrnoException).code;
            if (code === 'EEXIST') break;
            if (code !== 'ENOENT' || attempt >= 3) throw err;
          }
        }
        await setLimits(h, dir, limits);
        if (h.controllers.has('pids')) {
          await writeFile(join(dir, 'pids.max'), String(limits.processes));
          pidsDir = dir;
        }
        procs.push(join(dir, 'cgroup.procs'));
      }
      const memoryDir = memory === undefined ? undefined : dirOf(memory, sandboxId, callId);
      const memoryVersion = memory?.version;
      return {
        procs,
        pidsDir,
        oomKills: async () => {
          if (memoryDir === undefined) return 0;
          const text = await readFile(
            join(memoryDir, memoryVersion === 1 ? 'memory.oom_control' : 'memory.events'),
            'utf8',
          ).catch(() => '');
          const match = /^oom_kill (\d+)$/m.exec(text);
          return match ? Number(match[1]) : 0;
        },
      };
    },
    kill: (sandboxId, callId) => killDir(dirOf(pids, sandboxId, callId)),
    async remove(sandboxId, callId) {
      for (const h of hierarchies) {
        await removeDir(dirOf(h, sandboxId, callId));
        // EBUSY while another command of the sandbox holds a cgroup in it: it stays.
        if (callId !== undefined) await rmdir(dirOf(h, sandboxId)).catch(() => undefined);
      }
    },
    async release() {
      for (const h of hierarchies) await rmdir(h.base).catch(() => undefined);
    },
  };
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  );
}
