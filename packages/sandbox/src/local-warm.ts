// A warm sandbox: one resident bwrap per sandbox that runs its commands one after another.
//
// A cold command pays for a whole sandbox start: bwrap's namespaces, sandbox-runtime's two socat
// proxy bridges (and its wait until they listen), the seccomp helper, three bashes. For a session
// that runs many short commands that is most of the time of each. So the first command of a
// sandbox starts an executor: the same wrapped line, with the same policy, running AGENT (below)
// instead of a command. AGENT reads requests on its stdin and runs each in a fresh subshell of
// its own process group through LAUNCHER, so a command sees exactly what a cold one sees.
//
// Channels: the command's stdout and stderr are the executor's (one command at a time, so they
// need no framing); the end of each is a random token the executor writes once the command and
// its process group are gone, and a status line on fd 3 gives the exit status and how many
// processes the namespace holds. A command that leaves a process behind (one that left its
// process group) gets the executor killed, namespace and all, as a cold command's end would; so
// do a timeout and a cancel. The next command starts a new executor.
import { spawn, type ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import type { Logger } from 'pino';
import type { CommandCgroup, SandboxCgroups } from './cgroup.ts';
import { LAUNCHER } from './launch.ts';
import type { ExecResult, SandboxDenial } from './provider.ts';
import type { Runtime } from './runtime.ts';
import { hostArgv, type SandboxUser } from './sandbox-user.ts';
import { TailBuffer } from './tail.ts';

/**
 * Runs in the sandbox under bash with fd 3 the status channel. Requests are NUL-separated:
 * token, pair count, then name and value of each launcher variable (`launchEnv`'s output).
 * Values are read with `read -r -d ''` and only ever expanded in double quotes.
 */
const AGENT = `
set -m
exec 4>&2 2>/dev/null
TM_TAB=(/proc/[0-9]*)
printf 'ready %s\\n' "\${#TM_TAB[@]}" >&3
while IFS= read -r -d '' TM_TOKEN && IFS= read -r -d '' TM_N; do
  TM_KV=()
  for ((TM_I = 0; TM_I < TM_N * 2; TM_I++)); do
    IFS= read -r -d '' TM_V || exit 0
    TM_KV+=("$TM_V")
  done
  (
    exec 3>&- 2>&4 4>&- </dev/null
    for ((TM_I = 0; TM_I < \${#TM_KV[@]}; TM_I += 2)); do
      [[ "\${TM_KV[TM_I]}" =~ ^[A-Za-z_][A-Za-z0-9_]*$ ]] || exit 126
      export "\${TM_KV[TM_I]}=\${TM_KV[TM_I + 1]}"
    done
    unset TM_KV TM_V TM_I TM_N TM_TOKEN TM_TAB
    ${LAUNCHER}
  ) &
  TM_PID=$!
  wait "$TM_PID"
  TM_STATUS=$?
  kill -KILL -- "-$TM_PID"
  TM_TAB=(/proc/[0-9]*)
  printf '%s' "$TM_TOKEN"
  printf '%s' "$TM_TOKEN" >&4
  printf '%s %s %s\\n' "$TM_TOKEN" "$TM_STATUS" "\${#TM_TAB[@]}" >&3
done
`;

/** How long an executor may take to say it is ready before the command runs cold instead. */
const READY_TIMEOUT_MS = 10_000;
/** Processes the executor may hold between commands (its bridges, its agent). */
const OVERHEAD_PROCESSES = 16;
/** How long to wait for the output pipes to close once the executor's leader is gone. */
const PIPE_GRACE_MS = 2_000;

export interface WarmRequest {
  /** The launcher variables (`launchEnv`): argv, env, cwd and limits of the command. */
  readonly vars: Readonly<Record<string, string>>;
  readonly processes: number;
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly timeoutMs: number;
  readonly signal?: AbortSignal;
  readonly maxDenials: number;
}

export interface WarmExecutor {
  /** True while a command runs or once the executor is gone: the next command runs cold. */
  readonly unavailable: boolean;
  /** Runs one command; undefined when the executor is busy or gone (run it cold then). */
  run(request: WarmRequest): Promise<ExecResult | undefined>;
  stop(): Promise<void>;
}

export interface WarmStart {
  readonly sandboxId: string;
  readonly workdir: string;
  readonly allowRead: readonly string[];
  readonly allowedDomains: readonly string[];
  /** Environment of the host-side bash that starts bwrap (inert names only). */
  readonly hostEnv: Readonly<Record<string, string>>;
  readonly runtime: Runtime;
  readonly cgroups: SandboxCgroups | undefined;
  /** Memory and CPU of the sandbox, for its cgroups. */
  readonly memoryBytes?: number;
  readonly cpuPercent?: number;
  /** Size of the executor's private /tmp (the sandbox's disk limit). */
  readonly tmpBytes?: number;
  /** The host user commands run as (the service is root), or none. */
  readonly user: SandboxUser | undefined;
  /** Idle time after which the executor stops by itself. */
  readonly idleMs: number;
  readonly logger: Logger;
  /** Called once the executor is gone, whatever ended it. */
  readonly onGone: () => void;
}

export async function startWarmExecutor(start: WarmStart): Promise<WarmExecutor> {
  const executorId = randomBytes(16).toString('base64url');
  const undo: (() => void | Promise<void>)[] = [];
  const cleanup = async (): Promise<void> => {
    for (const step of undo.reverse()) await step();
    undo.length = 0;
  };
  try {
    let group: CommandCgroup | undefined;
    const { cgroups } = start;
    if (cgroups) {
      group = await cgroups.create(start.sandboxId, executorId, {
        processes: OVERHEAD_PROCESSES,
        ...(start.memoryBytes === undefined ? {} : { memoryBytes: start.memoryBytes }),
        ...(start.cpuPercent === undefined ? {} : { cpuPercent: start.cpuPercent }),
      });
      undo.push(() => cgroups.remove(start.sandboxId, executorId));
    }
    undo.push(start.runtime.allowHosts(executorId, start.allowedDomains));
    const wrapped = await start.runtime.wrap({
      script: AGENT,
      commandId: executorId,
      workdir: start.workdir,
      allowRead: start.allowRead,
      ...(start.tmpBytes === undefined ? {} : { tmpBytes: start.tmpBytes }),
    });
    undo.push(wrapped.ended);
    const [file, ...args] = hostArgv(wrapped.line, {
      cgroupProcs: group?.procs ?? [],
      user: start.user,
    });
    const child = spawn(file, args, {
      cwd: start.workdir,
      env: { ...start.hostEnv },
      detached: true,
      stdio: ['pipe', 'pipe', 'pipe', 'pipe'],
    });
    const executor = new Executor(start, executorId, child, group, cleanup);
    await executor.ready();
    return executor;
  } catch (err) {
    await cleanup();
    throw err;
  }
}

interface Pending {
  readonly token: string;
  readonly stdout: TailBuffer;
  readonly stderr: TailBuffer;
  readonly out: MarkerSplitter;
  readonly err: MarkerSplitter;
  status?: { code: number; processes: number };
  readonly settle: () => void;
}

class Executor implements WarmExecutor {
  readonly #start: WarmStart;
  readonly #id: string;
  readonly #child: ChildProcess;
  readonly #group: CommandCgroup | undefined;
  readonly #cleanup: () => Promise<void>;
  readonly #exited: Promise<void>;
  readonly #closed: Promise<void>;
  #gone = false;
  #busy = false;
  #baseline = 0;
  #pending: Pending | undefined;
  #onReady: ((baseline: number) => void) | undefined;
  #idle: NodeJS.Timeout | undefined;
  #stopping: Promise<void> | undefined;

  constructor(
    start: WarmStart,
    id: string,
    child: ChildProcess,
    group: CommandCgroup | undefined,
    cleanup: () => Promise<void>,
  ) {
    this.#start = start;
    this.#id = id;
    this.#child = child;
    this.#group = group;
    this.#cleanup = cleanup;
    this.#exited = new Promise((resolve) => {
      child.once('exit', () => {
        this.#gone = true;
        resolve();
        this.#pending?.settle();
        void this.stop();
      });
      child.once('error', () => {
        this.#gone = true;
        resolve();
      });
    });
    this.#closed = new Promise((resolve) => child.once('close', () => resolve()));
    child.stdin!.on('error', () => undefined);
    child.stdout!.on('data', (chunk: Buffer) => this.#pending?.out.push(chunk));
    child.stderr!.on('data', (chunk: Buffer) => this.#pending?.err.push(chunk));
    let buffered = '';
    (child.stdio[3] as NodeJS.ReadableStream).on('data', (chunk: Buffer) => {
      buffered += chunk.toString('latin1');
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        this.#onStatus(buffered.slice(0, nl));
        buffered = buffered.slice(nl + 1);
      }
    });
  }

  get unavailable(): boolean {
    return this.#busy || this.#gone || this.#stopping !== undefined;
  }

  async ready(): Promise<void> {
    let timer: NodeJS.Timeout | undefined;
    try {
      this.#baseline = await Promise.race([
        new Promise<number>((resolve) => (this.#onReady = resolve)),
        this.#exited.then(() => Promise.reject(new Error('the warm executor exited at start'))),
        new Promise<never>((_, reject) => {
          timer = setTimeout(
            () => reject(new Error('the warm executor did not start in time')),
            READY_TIMEOUT_MS,
          );
        }),
      ]);
    } catch (err) {
      await this.stop();
      throw err;
    } finally {
      clearTimeout(timer);
    }
    this.#armIdle();
  }

  async run(request: WarmRequest): Promise<ExecResult | undefined> {
    if (this.unavailable) return undefined;
    this.#busy = true;
    clearTimeout(this.#idle);
    const started = performance.now();
    const token = randomBytes(16).toString('hex');
    let timedOut = false;
    let canceled = false;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const stdout = new TailBuffer(request.stdoutBytes);
    const stderr = new TailBuffer(request.stderrBytes);
    const pending: Pending = {
      token,
      stdout,
      stderr,
      out: new MarkerSplitter(
        token,
        (b) => stdout.push(b),
        () => this.#check(pending),
      ),
      err: new MarkerSplitter(
        token,
        (b) => stderr.push(b),
        () => this.#check(pending),
      ),
      settle,
    };
    this.#pending = pending;
    const stopCollecting = this.#start.runtime.collect(this.#id, request.maxDenials);
    const kill = (): void => void this.stop();
    const timer = setTimeout(() => {
      timedOut = true;
      kill();
    }, request.timeoutMs);
    const onAbort = (): void => {
      canceled = true;
      kill();
    };
    request.signal?.addEventListener('abort', onAbort, { once: true });
    let oomBefore = 0;
    try {
      if (this.#group !== undefined) {
        // The command's cap on top of what the executor itself holds right now.
        const dir = this.#group.pidsDir;
        const current = Number(await readFile(join(dir, 'pids.current'), 'utf8'));
        await writeFile(join(dir, 'pids.max'), String(current + request.processes));
        oomBefore = await this.#group.oomKills();
      }
      const entries = Object.entries(request.vars);
      const fields = [token, String(entries.length), ...entries.flat()];
      this.#child.stdin!.write(fields.map((f) => `${f}\0`).join(''));
      await settled;
    } finally {
      clearTimeout(timer);
      request.signal?.removeEventListener('abort', onAbort);
    }
    const oomKilled = (await this.#group?.oomKills()) ?? 0;
    const status = pending.status;
    if (status === undefined || status.processes > this.#baseline) {
      // Killed, or a process of the command outlived it: the namespace goes with it.
      await this.stop();
    }
    // Violation reports travel over a socket; let any already delivered be read first.
    await yieldToLoop();
    const denials: SandboxDenial[] = stopCollecting();
    this.#pending = undefined;
    this.#busy = false;
    this.#armIdle();
    const killed = status === undefined;
    return {
      exitCode: killed ? null : status.code,
      signal: killed ? 'SIGKILL' : null,
      stdout: stdout.result(),
      stderr: stderr.result(),
      durationMs: Math.round(performance.now() - started),
      timedOut: killed && timedOut,
      canceled: killed && canceled && !timedOut,
      denials,
      ...(oomKilled > oomBefore ? { limitExceeded: 'memory' as const } : {}),
    };
  }

  stop(): Promise<void> {
    this.#stopping ??= (async () => {
      clearTimeout(this.#idle);
      if (!this.#gone) {
        try {
          process.kill(-this.#child.pid!, 'SIGKILL');
        } catch {
          // The group is gone already.
        }
      }
      await this.#start.cgroups?.kill(this.#start.sandboxId, this.#id);
      await this.#exited;
      // Every process of the namespace holds the pipes: once they close, nothing is left.
      let grace: NodeJS.Timeout | undefined;
      await Promise.race([
        this.#closed,
        new Promise((resolve) => (grace = setTimeout(resolve, PIPE_GRACE_MS))),
      ]);
      clearTimeout(grace);
      this.#pending?.settle();
      await this.#cleanup();
      this.#start.onGone();
      this.#start.logger.debug({ sandboxId: this.#start.sandboxId }, 'warm executor stopped');
    })();
    return this.#stopping;
  }

  #onStatus(line: string): void {
    const ready = /^ready (\d+)$/.exec(line);
    if (ready) {
      this.#onReady?.(Number(ready[1]));
      return;
    }
    const pending = this.#pending;
    const [token, code, processes] = line.split(' ');
    if (pending === undefined || token !== pending.token) return;
    pending.status = { code: Number(code), processes: Number(processes) };
    this.#check(pending);
  }

  #check(pending: Pending): void {
    if (pending.status !== undefined && pending.out.done && pending.err.done) pending.settle();
  }

  #armIdle(): void {
    clearTimeout(this.#idle);
    if (this.unavailable) return;
    this.#idle = setTimeout(() => void this.stop(), this.#start.idleMs);
    this.#idle.unref();
  }
}

/**
 * Passes a stream's bytes on until a marker, which may arrive split across chunks; bytes that
 * could be the start of the marker are held back until the next chunk tells.
 */
export class MarkerSplitter {
  readonly #marker: Buffer;
  readonly #emit: (bytes: Buffer) => void;
  readonly #onDone: () => void;
  #held: Buffer = Buffer.alloc(0);
  done = false;

  constructor(marker: string, emit: (bytes: Buffer) => void, onDone: () => void) {
    this.#marker = Buffer.from(marker);
    this.#emit = emit;
    this.#onDone = onDone;
  }

  push(chunk: Buffer): void {
    if (this.done) return;
    const data = this.#held.length === 0 ? chunk : Buffer.concat([this.#held, chunk]);
    const at = data.indexOf(this.#marker);
    if (at >= 0) {
      if (at > 0) this.#emit(data.subarray(0, at));
      this.#held = Buffer.alloc(0);
      this.done = true;
      this.#onDone();
      return;
    }
    // Hold back the longest tail that is a prefix of the marker.
    let keep = Math.min(this.#marker.length - 1, data.length);
    while (keep > 0 && !data.subarray(data.length - keep).equals(this.#marker.subarray(0, keep))) {
      keep--;
    }
    if (data.length - keep > 0) this.#emit(data.subarray(0, data.length - keep));
    this.#held = Buffer.from(data.subarray(data.length - keep));
  }
}
