// The `local` sandbox provider: Anthropic's sandbox-runtime over bubblewrap, on this host.
//
// A sandbox is a folder `<rootDir>/<id>/` holding `meta.json` (its session key) and `work/`,
// the workdir. Each command runs in a fresh bwrap: reads limited to the system folders, a
// minimal /etc and the workdir (read-policy.ts), writes to the workdir only, a private /tmp,
// its own network namespace with egress only through the runtime's proxies (which allow the
// session's hosts and nothing else), its own pid namespace, a scrubbed environment, an
// unprivileged uid (sandbox-user.ts), RLIMIT_FSIZE, and caps on processes, memory and CPU
// (cgroups where this host lets us make them, rlimits otherwise). This file makes, opens and
// destroys sandboxes and keeps their warm executors; one sandbox's commands and files are
// local-sandbox.ts.
import { randomBytes } from 'node:crypto';
import { chmod, chown, mkdir, readFile, realpath, rm, stat, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import { probeSandboxCgroups } from './cgroup.ts';
import { SandboxError } from './errors.ts';
import { SANDBOX_PATH } from './launch.ts';
import { sweepOrphans } from './orphans.ts';
import type { Running } from './local-process.ts';
import type { CreateSandboxOptions, ExecLimits, Sandbox, SandboxProvider } from './provider.ts';
import { acquireRuntime } from './runtime.ts';
import { startWarmExecutor, type WarmExecutor } from './local-warm.ts';
import { assertReachable, sandboxUserFor, type SandboxUser } from './sandbox-user.ts';
import {
  LocalSandbox,
  TMP_DIR,
  type Meta,
  type ProviderDeps,
  type SandboxHost,
} from './local-sandbox.ts';

export const DEFAULT_LIMITS: ExecLimits = {
  stdoutBytes: 64 * 1024,
  stderrBytes: 64 * 1024,
  fileSizeBytes: 1024 * 1024 * 1024,
  processes: 512,
};

/** How the process cap is enforced: see `cgroup.ts` for why RLIMIT_NPROC alone fails as root. */
export const ProcessLimitMode = {
  /** A pids cgroup per command: works as root. */
  cgroup: 'cgroup',
  /** RLIMIT_NPROC: enforced only when the service does not run as root. */
  rlimit: 'rlimit',
  /** Root without a usable pids cgroup: no process cap at all. */
  none: 'none',
} as const;
export type ProcessLimitMode = (typeof ProcessLimitMode)[keyof typeof ProcessLimitMode];

/** How memory and CPU are capped: a cgroup of the sandbox, or rlimits of each process. */
export const ResourceLimitMode = { cgroup: 'cgroup', rlimit: 'rlimit' } as const;
export type ResourceLimitMode = (typeof ResourceLimitMode)[keyof typeof ResourceLimitMode];

export const DEFAULT_MEMORY_BYTES = 2 * 1024 * 1024 * 1024;
export const DEFAULT_CPU_PERCENT = 100;
export const DEFAULT_DISK_BYTES = 10 * 1024 * 1024 * 1024;
/** Exit status of a command killed by SIGXCPU (RLIMIT_CPU), as the sandbox's layers pass it. */

export interface LocalSandboxOptions {
  /** Folder holding every sandbox of this provider. */
  readonly rootDir: string;
  /** Hosts every sandbox may reach; a sandbox may add its own. Default: none. */
  readonly allowedDomains?: readonly string[];
  /** Hosts no sandbox may reach, even when allowed. */
  readonly deniedDomains?: readonly string[];
  /**
   * Host paths sandboxes may read besides the system allow-list (`read-policy.ts`) and their
   * workdir. Default: none.
   */
  readonly allowRead?: readonly string[];
  readonly limits?: Partial<ExecLimits>;
  /** Memory of one sandbox, every command together (cgroup), or of each process (RLIMIT_AS). */
  readonly memoryBytes?: number;
  /**
   * CPU of one sandbox in percent of one core (cgroup bandwidth); without a cpu cgroup, each
   * process gets RLIMIT_CPU of this share of its command's timeout.
   */
  readonly cpuPercent?: number;
  /** Host user of commands when the service runs as root. Default 65534 (nobody). */
  readonly sandboxUser?: SandboxUser;
  /**
   * Disk of one sandbox: its workdir's usage, and the size of each command's private /tmp (see
   * disk.ts). Default 10 GiB.
   */
  readonly diskBytes?: number;
  /** Use cgroups per sandbox and command when they can be made (default true). */
  readonly pidsCgroup?: boolean;
  /**
   * How long a sandbox's warm executor (see `local-warm.ts`) waits for its next command before
   * it stops. 0: every command starts its own bwrap. Default 60 s.
   */
  readonly warmIdleMs?: number;
  readonly logger?: Logger;
}

export interface LocalSandboxProvider extends SandboxProvider {
  readonly kind: 'local';
  readonly rootDir: string;
  readonly processLimit: ProcessLimitMode;
  readonly memoryLimit: ResourceLimitMode;
  readonly cpuLimit: ResourceLimitMode;
  /** The host uid commands run as (this process's own when it is not root). */
  readonly sandboxUid: number;
}

const ID_PATTERN = /^lsb_[0-9a-f]{20}$/;

export async function createLocalSandboxProvider(
  options: LocalSandboxOptions,
): Promise<LocalSandboxProvider> {
  const logger = (options.logger ?? pino({ level: 'silent' })).child({
    component: 'sandbox.local',
  });
  await mkdir(resolve(options.rootDir), { recursive: true });
  const rootDir = await realpath(resolve(options.rootDir));
  const user = sandboxUserFor(options.sandboxUser);
  if (user !== undefined) {
    // The sandbox user must pass through it (bwrap binds the workdir with its rights): the
    // execute bits are added, nothing else changes (a mkdtemp folder is 0700).
    const { mode } = await stat(rootDir);
    if ((mode & 0o011) !== 0o011) await chmod(rootDir, (mode & 0o7777) | 0o011);
    assertReachable(user, rootDir);
  }
  // What an instance of this root killed without closing left running ends before we start.
  await sweepOrphans(rootDir, logger);
  const runtime = await acquireRuntime({
    rootDir,
    deniedDomains: [...(options.deniedDomains ?? [])],
    ...(user === undefined ? {} : { sandboxUser: user }),
  });
  const memoryBytes = options.memoryBytes ?? DEFAULT_MEMORY_BYTES;
  const cpuPercent = options.cpuPercent ?? DEFAULT_CPU_PERCENT;
  const cgroups =
    options.pidsCgroup === false
      ? undefined
      : await probeSandboxCgroups({ memory: true, cpu: true });
  const processLimit: ProcessLimitMode = cgroups
    ? 'cgroup'
    : process.getuid?.() === 0
      ? 'none'
      : 'rlimit';
  if (processLimit === 'none') {
    logger.warn('running as root without a pids cgroup: sandboxed commands have no process cap');
  }
  const provider = new LocalProvider({
    rootDir,
    runtime,
    cgroups,
    processLimit,
    logger,
    allowedDomains: [...(options.allowedDomains ?? [])],
    allowRead: [...(options.allowRead ?? [])],
    limits: { ...DEFAULT_LIMITS, ...options.limits },
    warmIdleMs: options.warmIdleMs ?? DEFAULT_WARM_IDLE_MS,
    user,
    memoryBytes,
    cpuPercent,
    diskBytes: options.diskBytes ?? DEFAULT_DISK_BYTES,
  });
  logger.info(
    {
      rootDir,
      processLimit,
      memoryLimit: provider.memoryLimit,
      cpuLimit: provider.cpuLimit,
      sandboxUid: provider.sandboxUid,
      cgroups: cgroups?.base,
    },
    'local sandbox provider ready',
  );
  return provider;
}

export const DEFAULT_WARM_IDLE_MS = 60_000;

class LocalProvider implements LocalSandboxProvider, SandboxHost {
  readonly kind = 'local' as const;
  readonly rootDir: string;
  readonly processLimit: ProcessLimitMode;
  readonly memoryLimit: ResourceLimitMode;
  readonly cpuLimit: ResourceLimitMode;
  readonly sandboxUid: number;
  readonly deps: ProviderDeps;
  /** Commands still running, per sandbox id, whichever handle started them. */
  readonly running = new Map<string, Set<Running>>();
  /** Warm executors per sandbox id, started or starting. */
  readonly #warm = new Map<string, Promise<WarmExecutor | undefined>>();
  /** Set when an executor failed to start: commands then run cold, as they always can. */
  #warmBroken = false;
  #closed = false;

  constructor(deps: ProviderDeps) {
    this.deps = deps;
    this.rootDir = deps.rootDir;
    this.processLimit = deps.processLimit;
    this.memoryLimit = deps.cgroups?.memory === true ? 'cgroup' : 'rlimit';
    this.cpuLimit = deps.cgroups?.cpu === true ? 'cgroup' : 'rlimit';
    this.sandboxUid = deps.user?.uid ?? process.getuid?.() ?? 0;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async create(options: CreateSandboxOptions): Promise<Sandbox> {
    this.#assertOpen();
    const id = `lsb_${randomBytes(10).toString('hex')}`;
    const dir = join(this.rootDir, id);
    const meta: Meta = {
      key: { ...options.key },
      allowedDomains: [...(options.network?.allowedDomains ?? [])],
      createdAt: new Date().toISOString(),
    };
    await mkdir(join(dir, 'work', TMP_DIR), { recursive: true });
    await writeFile(join(dir, 'meta.json'), JSON.stringify(meta), { mode: 0o600 });
    const { user } = this.deps;
    if (user !== undefined) {
      // The workdir is the sandbox user's; the folder around it only lets it through.
      await chmod(dir, 0o711);
      await chown(join(dir, 'work'), user.uid, user.gid);
      await chmod(join(dir, 'work'), 0o700);
      await chown(join(dir, 'work', TMP_DIR), user.uid, user.gid);
    }
    this.deps.logger.debug({ sandboxId: id, key: meta.key }, 'sandbox created');
    return new LocalSandbox(this, id, meta);
  }

  async open(sandboxId: string): Promise<Sandbox | undefined> {
    this.#assertOpen();
    if (!ID_PATTERN.test(sandboxId)) return undefined;
    const text = await readFile(join(this.rootDir, sandboxId, 'meta.json'), 'utf8').catch(
      (err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      },
    );
    return text === undefined
      ? undefined
      : new LocalSandbox(this, sandboxId, JSON.parse(text) as Meta);
  }

  async destroy(sandboxId: string): Promise<void> {
    if (!ID_PATTERN.test(sandboxId)) return;
    await this.stopAll(sandboxId);
    if (this.deps.cgroups) {
      // Also reaches commands another instance of the service started in this sandbox.
      await this.deps.cgroups.kill(sandboxId);
      await this.deps.cgroups.remove(sandboxId);
    }
    await rm(join(this.rootDir, sandboxId), { recursive: true, force: true });
    this.deps.logger.debug({ sandboxId }, 'sandbox destroyed');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    const ids = new Set([...this.running.keys(), ...this.#warm.keys()]);
    await Promise.all([...ids].map((id) => this.stopAll(id)));
    await this.deps.cgroups?.release();
    await this.deps.runtime.release();
  }

  async stopAll(sandboxId: string): Promise<void> {
    const warm = this.#warm.get(sandboxId);
    const set = this.running.get(sandboxId);
    await Promise.all([
      warm?.then((executor) => executor?.stop()),
      ...[...(set ?? [])].map((r) => r.kill()),
    ]);
  }

  /** Stops a sandbox's warm executor (the next command starts one with the new policy). */
  async stopWarm(sandboxId: string): Promise<void> {
    const warm = this.#warm.get(sandboxId);
    this.#warm.delete(sandboxId);
    await warm?.then((executor) => executor?.stop());
  }

  /** The sandbox's warm executor when it is free, started on first use; else undefined. */
  async warmFor(
    sandbox: LocalSandbox,
    allowedDomains: readonly string[],
  ): Promise<WarmExecutor | undefined> {
    if (this.deps.warmIdleMs <= 0 || this.#warmBroken || this.#closed) return undefined;
    const known = this.#warm.get(sandbox.id);
    if (known !== undefined) {
      const executor = await known;
      return executor === undefined || executor.unavailable ? undefined : executor;
    }
    const forget = (): void => {
      if (this.#warm.get(sandbox.id) === self) this.#warm.delete(sandbox.id);
    };
    const self: Promise<WarmExecutor | undefined> = startWarmExecutor({
      sandboxId: sandbox.id,
      workdir: sandbox.workdir,
      allowRead: [...this.deps.allowRead, ...sandbox.readPaths],
      allowedDomains,
      hostEnv: { PATH: SANDBOX_PATH, SHLVL: '1', LANG: 'C.UTF-8' },
      runtime: this.deps.runtime,
      cgroups: this.deps.cgroups,
      memoryBytes: this.deps.memoryBytes,
      cpuPercent: this.deps.cpuPercent,
      tmpBytes: this.deps.diskBytes,
      user: this.deps.user,
      idleMs: this.deps.warmIdleMs,
      logger: this.deps.logger,
      onGone: forget,
    }).catch((err: unknown) => {
      this.#warmBroken = true;
      forget();
      this.deps.logger.warn(
        { err, sandboxId: sandbox.id },
        'warm executor failed to start: commands run cold from now on',
      );
      return undefined;
    });
    this.#warm.set(sandbox.id, self);
    const executor = await self;
    return executor?.unavailable === false ? executor : undefined;
  }

  #assertOpen(): void {
    if (this.#closed) throw new SandboxError('closed', 'the local sandbox provider is closed');
  }
}
