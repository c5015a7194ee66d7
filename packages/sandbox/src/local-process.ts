// One sandboxed command on the host: start the wrapped bwrap line, keep the tails of its output,
// enforce its deadline and cancel signal, and make sure nothing of it is left when it ends.
//
// Killing: the host-side chain (sh -> bash -> bwrap, each exec'd in turn) is the leader of its
// own process group, and bwrap runs with --die-with-parent and its own pid namespace. SIGKILL to
// the group kills bwrap; its child, pid 1 of the namespace, gets PDEATHSIG, and the kernel then
// kills every process in the namespace. Where a pids cgroup is available every process of the
// command is also in it, and is killed by pid from there as a second guarantee.
import { spawn } from 'node:child_process';
import { readFile } from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { setImmediate as yieldToLoop } from 'node:timers/promises';
import { SandboxError } from './errors.ts';
import type { ExecResult, SandboxDenial } from './provider.ts';
import { TailBuffer } from './tail.ts';

export interface LaunchSpec {
  /** The host-side argv (`hostArgv`): joins the cgroups, drops to the sandbox user, runs bwrap. */
  readonly argv: readonly [string, ...string[]];
  readonly env: Record<string, string>;
  /** Host-side working directory (the sandbox's cwd, which bwrap keeps). */
  readonly cwd: string;
  readonly stdin?: string | Uint8Array;
  /** Keeps stdin open (see `Running.stdin`) and hands each output chunk over as it comes. */
  readonly interactive?: {
    readonly onStdout: (chunk: Uint8Array) => void;
    readonly onStderr?: (chunk: Uint8Array) => void;
  };
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly timeoutMs?: number;
  readonly signal?: AbortSignal;
  /** Returns the denials reported for the command (called once, after it ended). */
  readonly denials: () => SandboxDenial[];
  /** Kills whatever is left in the command's cgroup. */
  readonly killTree: () => Promise<void>;
  /** Runs after the command ended and before the result is handed out. */
  readonly cleanup: () => Promise<void>;
}

export interface Running {
  readonly pid: number;
  readonly startedAt: Date;
  readonly procStartTime: string | undefined;
  readonly done: Promise<ExecResult>;
  /** The open stdin of an interactive command. */
  readonly stdin: Writable | undefined;
  kill(): Promise<ExecResult>;
}

/** How long to wait for the output pipes to close after the command's leader has exited. */
const PIPE_GRACE_MS = 2_000;

export async function launch(spec: LaunchSpec): Promise<Running> {
  const [file, ...args] = spec.argv;
  const started = performance.now();
  const startedAt = new Date();
  const child = spawn(file, args, {
    cwd: spec.cwd,
    env: spec.env,
    detached: true,
    stdio: [spec.stdin === undefined && !spec.interactive ? 'ignore' : 'pipe', 'pipe', 'pipe'],
  });
  // Listen before the first await: a quick command may be gone by the time it returns, and
  // 'close' may follow 'exit' within the same tick.
  let exited = false;
  const exit = new Promise<[number | null, NodeJS.Signals | null]>((resolve) =>
    child.once('exit', (code, sig) => {
      exited = true;
      resolve([code, sig]);
    }),
  );
  const close = new Promise<boolean>((resolve) => child.once('close', () => resolve(true)));
  try {
    await new Promise<void>((resolve, reject) => {
      child.once('spawn', resolve);
      child.once('error', reject);
    });
  } catch (err) {
    await spec.cleanup();
    const code = (err as NodeJS.ErrnoException).code;
    throw new SandboxError(
      code === 'E2BIG' ? 'invalid_command' : 'unavailable',
      code === 'E2BIG'
        ? 'the command and its environment are too large for the kernel (E2BIG)'
        : `the sandbox could not start: ${String(err)}`,
      { cause: err },
    );
  }
  const pid = child.pid!;
  const procStartTime = await readStartTime(pid);
  const stdout = new TailBuffer(spec.stdoutBytes);
  const stderr = new TailBuffer(spec.stderrBytes);
  const live = spec.interactive;
  child.stdout!.on('data', (chunk: Buffer) => {
    stdout.push(chunk);
    live?.onStdout(chunk);
  });
  child.stderr!.on('data', (chunk: Buffer) => {
    stderr.push(chunk);
    live?.onStderr?.(chunk);
  });
  if (child.stdin) {
    // A command that exits without reading its stdin closes the pipe under us: not an error.
    child.stdin.on('error', () => undefined);
    if (!live) child.stdin.end(spec.stdin);
  }

  let timedOut = false;
  let canceled = false;
  let killing: Promise<void> | undefined;
  const killAll = (): Promise<void> => {
    killing ??= (async () => {
      // Once the leader is reaped its pid may be reused: signal the group only before that.
      if (!exited) {
        try {
          process.kill(-pid, 'SIGKILL');
        } catch {
          // The group is gone already.
        }
      }
      await spec.killTree();
    })();
    return killing;
  };

  const timer =
    spec.timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          void killAll();
        }, spec.timeoutMs);
  const onAbort = (): void => {
    canceled = true;
    void killAll();
  };
  if (spec.signal?.aborted) onAbort();
  else spec.signal?.addEventListener('abort', onAbort, { once: true });

  const done = (async (): Promise<ExecResult> => {
    const [exitCode, signal] = await exit;
    // The pipes close when the last process holding them is gone; give that a moment, then
    // make sure: a leftover would also have kept the pipe open.
    let grace: NodeJS.Timeout | undefined;
    const closed = await Promise.race([
      close,
      new Promise<boolean>((resolve) => (grace = setTimeout(() => resolve(false), PIPE_GRACE_MS))),
    ]);
    clearTimeout(grace);
    if (timer !== undefined) clearTimeout(timer);
    spec.signal?.removeEventListener('abort', onAbort);
    await killAll();
    if (!closed) {
      child.stdout!.destroy();
      child.stderr!.destroy();
    }
    // Violation reports travel over a socket; let any already delivered be read first.
    await yieldToLoop();
    const denials = spec.denials();
    await spec.cleanup();
    return {
      exitCode,
      signal,
      stdout: stdout.result(),
      stderr: stderr.result(),
      durationMs: Math.round(performance.now() - started),
      timedOut,
      canceled: canceled && !timedOut,
      denials,
    };
  })();

  return {
    pid,
    startedAt,
    procStartTime,
    done,
    stdin: live ? (child.stdin ?? undefined) : undefined,
    async kill() {
      canceled = true;
      await killAll();
      return done;
    },
  };
}

/** Field 22 of /proc/<pid>/stat; the command name (field 2) may hold spaces and parentheses. */
export async function readStartTime(pid: number): Promise<string | undefined> {
  const stat = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => undefined);
  if (stat === undefined) return undefined;
  return stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19];
}
