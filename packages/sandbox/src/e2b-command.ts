// One command in an E2B sandbox through envd (the SDK's `commands`): started in the background
// so this side owns its deadline and cancel, output tails kept as it streams, and the SDK's
// CommandExitError turned into a result, because a non-zero exit is an answer, not a failure.
//
// envd runs `/bin/bash -l -c <text>`. A `shell` command is that text; an `argv` command becomes
// `exec 'arg0' 'arg1' ...` with every argument single-quoted, so no character of it is shell
// syntax. Env values travel as the RPC's `envs` map, never as shell text.
import {
  CommandExitError,
  NotFoundError,
  type CommandHandle,
  type Sandbox as SdkSandbox,
} from 'e2b';
import { SandboxError } from './errors.ts';
import type { CommandSpec, ExecResult, SpawnOptions } from './provider.ts';
import { TailBuffer } from './tail.ts';

export interface RemoteCommand {
  readonly pid: number;
  readonly startedAt: Date;
  readonly done: Promise<ExecResult>;
  kill(): Promise<ExecResult>;
  /** Writes to stdin of an interactive command (envd's SendInput). */
  write(data: string | Uint8Array): Promise<void>;
  /** Closes stdin of an interactive command (envd's CloseStdin). */
  closeStdin(): Promise<void>;
}

export interface StartSpec {
  readonly sdk: SdkSandbox;
  readonly command: CommandSpec;
  /** Absolute working directory inside the sandbox. */
  readonly cwd: string;
  readonly options: SpawnOptions;
  /** Keeps stdin open and hands output over as it streams (`Sandbox.interact`). */
  readonly interactive?: {
    readonly onStdout: (chunk: Uint8Array) => void;
    readonly onStderr?: (chunk: Uint8Array) => void;
  };
  readonly stdoutBytes: number;
  readonly stderrBytes: number;
  readonly requestTimeoutMs: number;
}

const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/;

/** How envd's `status` names the signal a process died of (Go's names). */
const SIGNAL_OF_STATUS: Readonly<Record<string, string>> = {
  'signal: killed': 'SIGKILL',
  'signal: terminated': 'SIGTERM',
  'signal: interrupt': 'SIGINT',
  'signal: hangup': 'SIGHUP',
};

export function shellQuote(arg: string): string {
  return `'${arg.replaceAll("'", `'\\''`)}'`;
}

export function commandText(command: CommandSpec): string {
  if ('shell' in command) {
    if (command.shell.includes('\0')) {
      throw new SandboxError('invalid_command', 'the script contains NUL');
    }
    return command.shell;
  }
  if (command.argv.length === 0 || command.argv[0] === '') {
    throw new SandboxError('invalid_command', 'the command is empty');
  }
  command.argv.forEach((arg, i) => {
    if (arg.includes('\0')) throw new SandboxError('invalid_command', `argument ${i} contains NUL`);
  });
  return `exec ${command.argv.map(shellQuote).join(' ')}`;
}

export function checkEnv(env: Readonly<Record<string, string>>): Record<string, string> {
  for (const [name, value] of Object.entries(env)) {
    if (!ENV_NAME.test(name)) {
      throw new SandboxError(
        'invalid_env',
        `env name ${JSON.stringify(name)} is not an identifier`,
      );
    }
    if (value.includes('\0')) throw new SandboxError('invalid_env', `env ${name} contains NUL`);
  }
  return { ...env };
}

export async function startRemote(spec: StartSpec): Promise<RemoteCommand> {
  const { sdk, options } = spec;
  const text = commandText(spec.command);
  const envs = checkEnv(options.env ?? {});
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(timeoutMs > 0 && Number.isFinite(timeoutMs))) {
    throw new SandboxError(
      'invalid_command',
      'timeoutMs must be a positive number of milliseconds',
    );
  }
  const stdout = new TailBuffer(spec.stdoutBytes);
  const stderr = new TailBuffer(spec.stderrBytes);
  const started = performance.now();
  const startedAt = new Date();
  const handle: CommandHandle = await sdk.commands.run(text, {
    background: true,
    cwd: spec.cwd,
    envs,
    stdin: options.stdin !== undefined || spec.interactive !== undefined,
    // The stream stays open as long as the command runs; the deadline is enforced here.
    timeoutMs: 0,
    requestTimeoutMs: spec.requestTimeoutMs,
    onStdout: (data) => {
      const chunk = Buffer.from(data, 'utf8');
      stdout.push(chunk);
      spec.interactive?.onStdout(chunk);
    },
    onStderr: (data) => {
      const chunk = Buffer.from(data, 'utf8');
      stderr.push(chunk);
      spec.interactive?.onStderr?.(chunk);
    },
  });

  let timedOut = false;
  let canceled = false;
  let killing: Promise<unknown> | undefined;
  const killOnce = (): Promise<unknown> => (killing ??= handle.kill().catch((err: unknown) => err));
  const timer =
    timeoutMs === undefined
      ? undefined
      : setTimeout(() => {
          timedOut = true;
          void killOnce();
        }, timeoutMs);
  const onAbort = (): void => {
    canceled = true;
    void killOnce();
  };
  options.signal?.addEventListener('abort', onAbort, { once: true });
  if (options.signal?.aborted) onAbort();

  const done = (async (): Promise<ExecResult> => {
    let exitCode: number;
    let status: string | undefined;
    try {
      exitCode = (await handle.wait()).exitCode;
    } catch (err) {
      // The SDK throws for any non-zero exit; the exit code and output are the result.
      if (!(err instanceof CommandExitError)) {
        throw new SandboxError('unavailable', `lost the command's stream: ${String(err)}`, {
          cause: err,
        });
      }
      exitCode = err.exitCode;
      status = err.error;
    } finally {
      if (timer) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    }
    const killedHere = killing !== undefined;
    // envd reports a death by signal as exit code -1 with the signal in its status.
    const bySignal = exitCode < 0;
    return {
      exitCode: bySignal ? null : exitCode,
      signal: bySignal
        ? (SIGNAL_OF_STATUS[status ?? ''] ?? (killedHere ? 'SIGKILL' : 'UNKNOWN'))
        : null,
      stdout: stdout.result(),
      stderr: stderr.result(),
      durationMs: performance.now() - started,
      timedOut,
      canceled: canceled && !timedOut,
      denials: [],
    };
  })();
  // Callers may only ever call kill(); the outcome still must not be an unhandled rejection.
  done.catch(() => undefined);

  if (options.stdin !== undefined) {
    const data = options.stdin;
    try {
      await sdk.commands.sendStdin(
        handle.pid,
        typeof data === 'string' ? data : new Uint8Array(data),
      );
      await sdk.commands.closeStdin(handle.pid);
    } catch (err) {
      // NotFound: the command ended without reading its input, which is its business.
      if (!(err instanceof NotFoundError)) {
        await killOnce();
        throw new SandboxError(
          'unavailable',
          `could not write the command's stdin: ${String(err)}`,
          {
            cause: err,
          },
        );
      }
    }
  }

  let ended = false;
  void done.finally(() => (ended = true)).catch(() => undefined);
  return {
    pid: handle.pid,
    startedAt,
    done,
    kill: async () => {
      await killOnce();
      return done;
    },
    write: async (data) => {
      if (ended) throw new SandboxError('closed', `command ${handle.pid} has ended`);
      await sdk.commands
        .sendStdin(handle.pid, typeof data === 'string' ? data : new Uint8Array(data))
        .catch((err: unknown) => {
          throw new SandboxError('closed', `could not write to command ${handle.pid}`, {
            cause: err,
          });
        });
    },
    closeStdin: async () => {
      if (ended) return;
      await sdk.commands.closeStdin(handle.pid).catch((err: unknown) => {
        if (!(err instanceof NotFoundError)) throw err;
      });
    },
  };
}
