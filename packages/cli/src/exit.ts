// Exit codes scripts can rely on, and the one error type commands throw to pick one. Every
// failure path of the CLI ends in a CliError, so the code a script sees never depends on which
// library failed underneath.

export const ExitCode = {
  ok: 0,
  /** A failed result card, a task that ended failed (--wait), or a state change the api refused. */
  failed: 1,
  /** Bad flags, arguments or input. */
  usage: 2,
  /** NATS or the api unreachable, or the api key refused. */
  connection: 3,
  /** The project, execution, task, tool or file named does not exist. */
  notFound: 4,
  /** No result within the wait, or the call itself timed out. */
  timeout: 5,
  /** Ctrl-C while waiting (the shell's convention for SIGINT). */
  interrupted: 130,
} as const;
export type ExitCode = (typeof ExitCode)[keyof typeof ExitCode];

export const EXIT_CODES_HELP = `Exit codes:
  0  ok
  1  the tool call failed (a failed result card), a task failed (task start --wait),
     or the api refused the change (conflict)
  2  usage error: bad flags, arguments or JSON
  3  connection or authentication error (NATS or the api unreachable, key refused)
  4  not found (project, execution, task, tool, file)
  5  timeout: no result within the wait, or the call timed out
  130  interrupted (Ctrl-C) while waiting; the call itself goes on`;

export class CliError extends Error {
  readonly exitCode: ExitCode;
  /** The api's or the mesh's error code, when there is one (printed with --json). */
  readonly code: string;
  constructor(exitCode: ExitCode, code: string, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliError';
    this.exitCode = exitCode;
    this.code = code;
  }
}

export const usageError = (message: string) => new CliError(ExitCode.usage, 'usage', message);
