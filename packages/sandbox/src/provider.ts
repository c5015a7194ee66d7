// The SandboxProvider interface: what a skills service needs from a sandbox, whatever runs it.
// Adapters live one per file (`local.ts` on Anthropic's sandbox-runtime over bubblewrap; an
// `e2b.ts` later). Sessions (reuse, TTLs, locks) are kept by a registry above this interface:
// a provider only creates sandboxes, reopens them by id and destroys them by id.

/** Who a sandbox belongs to. A registry maps one key to at most one live sandbox. */
export interface SessionKey {
  readonly project: string;
  readonly agent: string;
  /** The agent's session, or the tool call id when every call gets a fresh sandbox. */
  readonly session: string;
}

export interface SandboxNetworkPolicy {
  /**
   * Hosts the sandbox may reach, in sandbox-runtime's grammar: `example.com`, `*.example.com`,
   * `api.example.com:443`, IP literals such as `127.0.0.1:8080`. Empty: no network at all.
   */
  readonly allowedDomains: readonly string[];
}

export interface CreateSandboxOptions {
  readonly key: SessionKey;
  /** Laid over the provider's policy: a session may be allowed more hosts than the default. */
  readonly network?: SandboxNetworkPolicy;
}

/** Resource limits of one command; every field has a provider default. */
export interface ExecLimits {
  /** Bytes of stdout kept (the tail: errors are at the end). */
  readonly stdoutBytes: number;
  /** Bytes of stderr kept (the tail). */
  readonly stderrBytes: number;
  /** Largest file the command may write (RLIMIT_FSIZE); a bigger write fails with EFBIG. */
  readonly fileSizeBytes: number;
  /** Most processes the command may have at once (see `LocalSandboxProvider.processLimit`). */
  readonly processes: number;
}

/**
 * What to run. `argv` runs a program with arguments and no shell; `shell` runs one bash script.
 * Either way the text reaches the sandbox as data: no user value is spliced into shell text on
 * the way, and the caller's env values reach the command verbatim.
 */
export type CommandSpec =
  { readonly argv: readonly [string, ...string[]] } | { readonly shell: string };

export interface SpawnOptions {
  /** Variables laid over the sandbox's base environment (PATH, HOME = workdir, LANG, TMPDIR). */
  readonly env?: Readonly<Record<string, string>>;
  /** Working directory relative to the workdir; may not leave it. Default: the workdir. */
  readonly cwd?: string;
  /** Wall-clock limit; when it passes every process of the command is killed. */
  readonly timeoutMs?: number;
  /** Aborting kills every process of the command; the result says `canceled`. */
  readonly signal?: AbortSignal;
  /** Written to the command's stdin, which is then closed. Without it stdin is /dev/null. */
  readonly stdin?: string | Uint8Array;
  readonly limits?: Partial<ExecLimits>;
}

export interface ExecOptions extends SpawnOptions {
  readonly timeoutMs: number;
}

/** The kept end of one output stream. */
export interface OutputTail {
  /** The last bytes of the stream as UTF-8 (a character cut in half at the start is dropped). */
  readonly text: string;
  /** True when bytes before `text` were dropped. */
  readonly truncated: boolean;
  /** Every byte the stream carried, kept or not. */
  readonly totalBytes: number;
}

export const DenialKind = {
  filesystem: 'filesystem',
  network: 'network',
  other: 'other',
} as const;
export type DenialKind = (typeof DenialKind)[keyof typeof DenialKind];

/** Something the sandbox refused, as its enforcement layer reported it. */
export interface SandboxDenial {
  readonly kind: DenialKind;
  /** The refused operation: a syscall (`openat`, `unlinkat`) or `network-outbound`. */
  readonly operation: string;
  /** What it was aimed at: a path or `host:port`, with the reason when one was given. */
  readonly target: string;
  /** Where the report came from; the local adapter reads the runtime's violation store. */
  readonly source: 'runtime';
}

export interface ExecResult {
  /** Null when the command was ended by a signal. */
  readonly exitCode: number | null;
  /** The signal that ended the command, e.g. `SIGKILL` after a timeout or cancel. */
  readonly signal: string | null;
  readonly stdout: OutputTail;
  readonly stderr: OutputTail;
  readonly durationMs: number;
  readonly timedOut: boolean;
  readonly canceled: boolean;
  /** Blocked writes and connections during the command, deduplicated, at most 50. */
  readonly denials: readonly SandboxDenial[];
  /**
   * Set when the kernel killed a process of the command for a resource limit: `memory` (an
   * out-of-memory kill in the sandbox's memory cgroup) or `cpu` (RLIMIT_CPU, SIGXCPU); `disk`
   * when the command took the sandbox's workdir past its disk limit (local: killed, or its write
   * refused with EFBIG/SIGXFSZ; see disk.ts).
   */
  readonly limitExceeded?: LimitExceeded;
}

export const LimitExceeded = { memory: 'memory', cpu: 'cpu', disk: 'disk' } as const;
export type LimitExceeded = (typeof LimitExceeded)[keyof typeof LimitExceeded];

export interface GetFileOptions {
  readonly maxBytes?: number;
}

/** A command left running: a service, an async task. */
export interface BackgroundProcess {
  /** Host pid of the process that holds the sandboxed tree (bwrap). */
  readonly pid: number;
  readonly startedAt: Date;
  /**
   * Field 22 of /proc/<pid>/stat (clock ticks since boot): with the pid and the command line it
   * proves that a pid found later is still this process and not a reused number.
   */
  readonly procStartTime: string | undefined;
  /** Resolves when every process of the command has ended. */
  wait(): Promise<ExecResult>;
  /** Kills every process of the command; resolves once they are gone. */
  kill(): Promise<ExecResult>;
}

/**
 * Options of a command whose pipes stay open (`Sandbox.interact`): a long-running program spoken
 * to over stdin and stdout, such as a tenant's MCP stdio server.
 */
export interface InteractiveOptions extends Omit<SpawnOptions, 'stdin'> {
  /** Each chunk of stdout as it arrives, in order. The result's tail keeps the last bytes too. */
  readonly onStdout: (chunk: Uint8Array) => void;
  /** Each chunk of stderr as it arrives (a server's logs); the tail is kept either way. */
  readonly onStderr?: (chunk: Uint8Array) => void;
}

/** A command left running with its stdin open to the caller. */
export interface InteractiveProcess extends BackgroundProcess {
  /** Writes to the command's stdin; rejects with SandboxError once the command is gone. */
  write(data: string | Uint8Array): Promise<void>;
  /** Closes the command's stdin (end of input); harmless when it already ended. */
  closeStdin(): Promise<void>;
}

export interface Sandbox {
  readonly id: string;
  readonly key: SessionKey;
  /** Absolute path of the workdir as commands inside the sandbox see it. */
  readonly workdir: string;
  /** Runs a command to completion. A non-zero exit, a timeout or a cancel is a result, not an error. */
  exec(command: CommandSpec, options: ExecOptions): Promise<ExecResult>;
  /** Starts a command and returns at once. */
  spawn(command: CommandSpec, options?: SpawnOptions): Promise<BackgroundProcess>;
  /**
   * Starts a command whose stdin stays open and whose stdout is handed over as it streams. The
   * same isolation as `spawn` (workdir, egress, limits); killing it ends every process of it.
   */
  interact(command: CommandSpec, options: InteractiveOptions): Promise<InteractiveProcess>;
  /** Writes a file at a workdir-relative path (parents created); a path that escapes is refused. */
  putFile(path: string, data: string | Uint8Array): Promise<void>;
  /**
   * Reads a file at a workdir-relative path; a path that escapes is refused. With `maxBytes`, a
   * larger file is refused (`too_large`), by its size before any byte is read where the
   * provider can tell (local: fstat of the opened file).
   */
  getFile(path: string, options?: GetFileOptions): Promise<Buffer>;
  /**
   * Where a port the sandbox listens on is reached from outside (E2B: `<port>-<id>.<domain>`).
   * Absent where a provider exposes ports another way (local: host forwarders).
   */
  endpointOf?(port: number): string;
  /**
   * Lets every later command of this sandbox read a host folder, read-only, at its own path
   * (local only: how a skill's cached dependency environment reaches a session). The grant is
   * kept with the sandbox, so another instance that reopens it sees the folder too.
   */
  grantRead?(hostPath: string): Promise<void>;
  /** Host folders granted with `grantRead`. */
  readonly readPaths?: readonly string[];
  /** Releases this handle; the sandbox, its files and its background processes live on. */
  close(): Promise<void>;
  /** Kills every process of the sandbox and deletes it. */
  destroy(): Promise<void>;
}

export interface SandboxProvider {
  readonly kind: 'local' | 'e2b';
  /** Creates a new, empty sandbox. */
  create(options: CreateSandboxOptions): Promise<Sandbox>;
  /** Reopens an existing sandbox by id; undefined when it is gone. */
  open(sandboxId: string): Promise<Sandbox | undefined>;
  /** Kills and deletes a sandbox by id (the reaper's call); a missing one is not an error. */
  destroy(sandboxId: string): Promise<void>;
  /** Stops everything this provider started in this process and releases its resources. */
  close(): Promise<void>;
}
