// One sandbox of the `local` provider (local.ts): its commands (each in a fresh bwrap, or on the
// sandbox's warm executor), its files inside the workdir and the host folders granted to it.
import { randomBytes } from 'node:crypto';
import { writeFile } from 'node:fs/promises';
import { isAbsolute, join, resolve } from 'node:path';
import type { Logger } from 'pino';
import type { SandboxCgroups } from './cgroup.ts';
import { diskUsage, SIGXFSZ_STATUS, watchDisk, type DiskWatch } from './disk.ts';
import { SandboxError } from './errors.ts';
import { launchEnv, LAUNCHER, SANDBOX_PATH } from './launch.ts';
import { launch, type LaunchSpec, type Running } from './local-process.ts';
import { checkDirInside, ensureDirInside, readFileInside, writeFileInside } from './paths.ts';
import type {
  BackgroundProcess,
  CommandSpec,
  ExecLimits,
  ExecOptions,
  ExecResult,
  InteractiveOptions,
  InteractiveProcess,
  GetFileOptions,
  Sandbox,
  SessionKey,
  SpawnOptions,
} from './provider.ts';
import type { Runtime } from './runtime.ts';
import type { WarmExecutor } from './local-warm.ts';
import { hostArgv, type SandboxUser } from './sandbox-user.ts';
import type { ProcessLimitMode, ResourceLimitMode } from './local.ts';

/** TMPDIR of commands, inside the workdir: the only place a command may write. */
export const TMP_DIR = '.tmp';
/** Denials kept per command. */
const MAX_DENIALS = 50;
const SIGXCPU_STATUS = 128 + 24;

export interface Meta {
  readonly key: SessionKey;
  readonly allowedDomains: readonly string[];
  readonly createdAt: string;
  /** Host folders this sandbox's commands may also read (`grantRead`). */
  readonly readPaths?: readonly string[];
}

export interface ProviderDeps {
  readonly rootDir: string;
  readonly runtime: Runtime;
  readonly cgroups: SandboxCgroups | undefined;
  readonly processLimit: ProcessLimitMode;
  readonly logger: Logger;
  readonly allowedDomains: readonly string[];
  readonly allowRead: readonly string[];
  readonly limits: ExecLimits;
  readonly warmIdleMs: number;
  readonly user: SandboxUser | undefined;
  readonly memoryBytes: number;
  readonly cpuPercent: number;
  /** Disk of one sandbox (disk.ts). */
  readonly diskBytes: number;
}

/** What a sandbox needs of the provider that made it. */
export interface SandboxHost {
  readonly rootDir: string;
  readonly deps: ProviderDeps;
  readonly closed: boolean;
  readonly processLimit: ProcessLimitMode;
  readonly memoryLimit: ResourceLimitMode;
  readonly cpuLimit: ResourceLimitMode;
  /** Commands still running, per sandbox id, whichever handle started them. */
  readonly running: Map<string, Set<Running>>;
  destroy(sandboxId: string): Promise<void>;
  stopWarm(sandboxId: string): Promise<void>;
  warmFor(
    sandbox: LocalSandbox,
    allowedDomains: readonly string[],
  ): Promise<WarmExecutor | undefined>;
}

/** What every handle of a started command offers: its ids, its end and a way to stop it. */
const handleOf = (running: Running): BackgroundProcess => ({
  pid: running.pid,
  startedAt: running.startedAt,
  procStartTime: running.procStartTime,
  wait: () => running.done,
  kill: () => running.kill(),
});

export class LocalSandbox implements Sandbox {
  readonly id: string;
  readonly key: SessionKey;
  readonly workdir: string;
  readonly #provider: SandboxHost;
  readonly #allowedDomains: readonly string[];
  #meta: Meta;
  #closed = false;

  constructor(provider: SandboxHost, id: string, meta: Meta) {
    this.#provider = provider;
    this.id = id;
    this.key = meta.key;
    this.#meta = meta;
    this.workdir = join(provider.rootDir, id, 'work');
    this.#allowedDomains = [...provider.deps.allowedDomains, ...meta.allowedDomains];
  }

  async exec(command: CommandSpec, options: ExecOptions): Promise<ExecResult> {
    // The warm path has no stdin to give (the executor's stdin carries its requests).
    if (options.stdin === undefined && options.signal?.aborted !== true) {
      const prepared = await this.#prepare(command, options);
      const warm = await this.#provider.warmFor(this, this.#allowedDomains);
      const disk = warm === undefined ? undefined : this.#watchDisk(prepared);
      const result = await warm?.run({
        vars: prepared.env,
        processes: prepared.limits.processes,
        stdoutBytes: prepared.limits.stdoutBytes,
        stderrBytes: prepared.limits.stderrBytes,
        timeoutMs: options.timeoutMs,
        signal: withDiskSignal(options.signal, disk),
        maxDenials: MAX_DENIALS,
      });
      const over = (await disk?.finish()) ?? false;
      if (result !== undefined) {
        return withDiskLimit(withCpuLimit(result, prepared.env), over, prepared, options.signal);
      }
    }
    const running = await this.#start(command, options);
    return running.done;
  }

  async spawn(command: CommandSpec, options: SpawnOptions = {}): Promise<BackgroundProcess> {
    return handleOf(await this.#start(command, options));
  }

  async interact(command: CommandSpec, options: InteractiveOptions): Promise<InteractiveProcess> {
    const { onStdout, onStderr, ...rest } = options;
    const running = await this.#start(command, rest, { onStdout, onStderr });
    const stdin = running.stdin!;
    let ended = false;
    void running.done.finally(() => (ended = true));
    return {
      ...handleOf(running),
      write: (data) =>
        new Promise<void>((resolve, reject) => {
          if (ended || stdin.destroyed || stdin.writableEnded) {
            reject(new SandboxError('closed', `the command in sandbox ${this.id} has ended`));
            return;
          }
          stdin.write(data, (err) =>
            err
              ? reject(
                  new SandboxError('closed', `could not write to the command: ${err.message}`, {
                    cause: err,
                  }),
                )
              : resolve(),
          );
        }),
      closeStdin: () =>
        new Promise<void>((resolve) => {
          if (stdin.writableEnded || stdin.destroyed) resolve();
          else stdin.end(resolve);
        }),
    };
  }

  get readPaths(): readonly string[] {
    return this.#meta.readPaths ?? [];
  }

  async grantRead(hostPath: string): Promise<void> {
    this.#assertOpen();
    if (!isAbsolute(hostPath) || resolve(hostPath) !== hostPath) {
      throw new SandboxError(
        'path_escape',
        `a granted read path must be absolute and normal: ${hostPath}`,
      );
    }
    if (this.readPaths.includes(hostPath)) return;
    this.#meta = { ...this.#meta, readPaths: [...this.readPaths, hostPath] };
    await writeFile(
      join(this.#provider.rootDir, this.id, 'meta.json'),
      JSON.stringify(this.#meta),
      {
        mode: 0o600,
      },
    );
    // A running warm executor was bound without the folder; the next command starts anew.
    await this.#provider.stopWarm(this.id);
  }

  async putFile(path: string, data: string | Uint8Array): Promise<void> {
    this.#assertOpen();
    const limit = this.#provider.deps.diskBytes;
    const used = await diskUsage(this.workdir).catch(() => 0);
    const size = typeof data === 'string' ? Buffer.byteLength(data) : data.byteLength;
    if (used + size > limit) {
      throw new SandboxError(
        'disk_full',
        `writing ${JSON.stringify(path)} (${size} bytes) would take sandbox ${this.id} past its disk limit of ${limit} bytes (${used} used)`,
        { details: { used_bytes: used, size_bytes: size, limit_bytes: limit } },
      );
    }
    await writeFileInside(this.workdir, path, data, this.#provider.deps.user);
  }

  async getFile(path: string, options: GetFileOptions = {}): Promise<Buffer> {
    this.#assertOpen();
    return readFileInside(this.workdir, path, options.maxBytes);
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  async destroy(): Promise<void> {
    this.#closed = true;
    await this.#provider.destroy(this.id);
  }

  /** Checks a command's options; returns its launcher variables and limits. */
  async #prepare(command: CommandSpec, options: SpawnOptions): Promise<Prepared> {
    this.#assertOpen();
    const { deps } = this.#provider;
    if (
      options.timeoutMs !== undefined &&
      !(options.timeoutMs > 0 && Number.isFinite(options.timeoutMs))
    ) {
      throw new SandboxError(
        'invalid_command',
        `timeoutMs must be a positive number of milliseconds`,
      );
    }
    const cwd = await checkDirInside(this.workdir, options.cwd ?? '.');
    // A command may have removed it; TMPDIR should exist for the next one. If a command put a
    // file or a link in its place, leave that alone: the command chose to break its TMPDIR.
    await ensureDirInside(this.workdir, TMP_DIR, deps.user).catch(() => undefined);
    const asked: ExecLimits = { ...deps.limits, ...options.limits };
    // What is left of the sandbox's disk caps the size of any file the command writes.
    const used = await diskUsage(this.workdir).catch(() => 0);
    const left = Math.max(0, deps.diskBytes - used);
    const diskBound = left < asked.fileSizeBytes;
    const limits: ExecLimits = { ...asked, fileSizeBytes: Math.min(asked.fileSizeBytes, left) };
    const cpuSec =
      this.#provider.cpuLimit === 'rlimit' && options.timeoutMs !== undefined
        ? Math.max(1, Math.ceil(((options.timeoutMs / 1000) * deps.cpuPercent) / 100))
        : undefined;
    const env = launchEnv({
      command,
      env: {
        PATH: SANDBOX_PATH,
        HOME: this.workdir,
        LANG: 'C.UTF-8',
        TMPDIR: join(this.workdir, TMP_DIR),
        // Debian's bash sources ~/.bashrc when stdin is a socket (Node's pipes are) unless it
        // is nested; SHLVL=1 makes the command's first bash count as nested, as in a login.
        SHLVL: '1',
        ...options.env,
      },
      cwd,
      limits,
      rlimitProcesses: this.#provider.processLimit === 'rlimit',
      ...(this.#provider.memoryLimit === 'rlimit' ? { rlimitMemoryBytes: deps.memoryBytes } : {}),
      ...(cpuSec === undefined ? {} : { rlimitCpuSec: cpuSec }),
    });
    return { cwd, limits, env, diskBound, usedBytes: used };
  }

  /** Watches the workdir while a command runs (disk.ts). */
  #watchDisk(prepared: Prepared): DiskWatch {
    return watchDisk(this.workdir, this.#provider.deps.diskBytes, prepared.usedBytes);
  }

  async #start(
    command: CommandSpec,
    options: SpawnOptions,
    interactive?: LaunchSpec['interactive'],
  ): Promise<Running> {
    const { deps } = this.#provider;
    const prepared = await this.#prepare(command, options);
    const { cwd, limits, env } = prepared;
    const disk = this.#watchDisk(prepared);
    const commandId = randomBytes(16).toString('base64url');
    const undo: (() => void | Promise<void>)[] = [];
    const cleanup = async (): Promise<void> => {
      for (const step of undo.reverse()) await step();
      undo.length = 0;
    };
    let diskOver = false;
    undo.push(async () => {
      diskOver = await disk.finish();
    });
    let oomKilled = 0;
    try {
      let cgroupProcs: readonly string[] = [];
      const { cgroups } = deps;
      if (cgroups) {
        const group = await cgroups.create(this.id, commandId, {
          processes: limits.processes,
          memoryBytes: deps.memoryBytes,
          cpuPercent: deps.cpuPercent,
        });
        undo.push(() => cgroups.remove(this.id, commandId));
        // Runs before the removal above (undo runs in reverse): the kernel's count of
        // out-of-memory kills in the command's cgroup.
        undo.push(async () => {
          oomKilled = await group.oomKills();
        });
        cgroupProcs = group.procs;
      }
      undo.push(deps.runtime.allowHosts(commandId, this.#allowedDomains));
      const stopCollecting = deps.runtime.collect(commandId, MAX_DENIALS);
      undo.push(() => void stopCollecting());
      const wrapped = await deps.runtime
        .wrap({
          script: LAUNCHER,
          commandId,
          workdir: this.workdir,
          allowRead: [...deps.allowRead, ...this.readPaths],
          tmpBytes: deps.diskBytes,
        })
        .catch((err: unknown) => {
          throw new SandboxError(
            'unavailable',
            `sandbox-runtime could not wrap the command: ${String(err)}`,
            {
              cause: err,
            },
          );
        });
      undo.push(wrapped.ended);
      const running = await launch({
        argv: hostArgv(wrapped.line, { cgroupProcs, user: deps.user }),
        env,
        cwd,
        stdin: options.stdin,
        interactive,
        stdoutBytes: limits.stdoutBytes,
        stderrBytes: limits.stderrBytes,
        timeoutMs: options.timeoutMs,
        signal: withDiskSignal(options.signal, disk),
        denials: stopCollecting,
        killTree: () => (cgroups ? cgroups.kill(this.id, commandId) : Promise.resolve()),
        cleanup,
      });
      const done = running.done.then((result) =>
        withDiskLimit(
          withCpuLimit(
            oomKilled > 0 ? { ...result, limitExceeded: 'memory' as const } : result,
            env,
          ),
          diskOver,
          prepared,
          options.signal,
        ),
      );
      const tracked: Running = { ...running, done, kill: () => running.kill().then(() => done) };
      this.#track(tracked);
      return tracked;
    } catch (err) {
      await cleanup();
      throw err;
    }
  }

  #track(running: Running): void {
    const all = this.#provider.running;
    let set = all.get(this.id);
    if (!set) all.set(this.id, (set = new Set()));
    set.add(running);
    const forget = (): void => {
      set.delete(running);
      if (set.size === 0 && all.get(this.id) === set) all.delete(this.id);
    };
    running.done.then(forget, forget);
  }

  #assertOpen(): void {
    if (this.#closed || this.#provider.closed) {
      throw new SandboxError('closed', `sandbox ${this.id} is closed`);
    }
  }
}

interface Prepared {
  readonly cwd: string;
  readonly limits: ExecLimits;
  readonly env: Record<string, string>;
  /** True when RLIMIT_FSIZE was lowered to what is left of the sandbox's disk. */
  readonly diskBound: boolean;
  /** The workdir's usage before the command. */
  readonly usedBytes: number;
}

/** The caller's cancel signal and the disk watch's, as one. */
function withDiskSignal(
  signal: AbortSignal | undefined,
  disk: DiskWatch | undefined,
): AbortSignal | undefined {
  if (disk === undefined) return signal;
  return signal === undefined ? disk.signal : AbortSignal.any([signal, disk.signal]);
}

/**
 * A command that took the workdir past the disk limit (killed by the watch, or left it over), or
 * died of SIGXFSZ where RLIMIT_FSIZE was what was left of the disk: `limitExceeded: 'disk'`.
 * A kill by the watch is not the caller's cancel.
 */
function withDiskLimit(
  result: ExecResult,
  over: boolean,
  prepared: Prepared,
  signal: AbortSignal | undefined,
): ExecResult {
  const xfsz = result.exitCode === SIGXFSZ_STATUS || result.signal === 'SIGXFSZ';
  if (!over && !(prepared.diskBound && xfsz)) return result;
  return {
    ...result,
    canceled: result.canceled && signal?.aborted === true,
    limitExceeded: result.limitExceeded ?? 'disk',
  };
}

/**
 * A command that died of SIGXCPU under RLIMIT_CPU: the layers between it and us (bash, the
 * seccomp helper, bwrap) turn its signal into the exit status 128 + 24.
 */
function withCpuLimit(result: ExecResult, vars: Readonly<Record<string, string>>): ExecResult {
  if (result.limitExceeded !== undefined || vars.TOOLMESH_CPU === undefined) return result;
  return result.exitCode === SIGXCPU_STATUS || result.signal === 'SIGXCPU'
    ? { ...result, limitExceeded: 'cpu' }
    : result;
}
