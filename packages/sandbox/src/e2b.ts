// The `e2b` sandbox provider: sandboxes in E2B cloud or a self-hosted E2B, through the `e2b` SDK.
//
// A sandbox is an E2B sandbox created from the configured template, its session key kept in
// the sandbox's metadata so any instance can reopen it by id. Commands run in `workdir` (see
// e2b-command.ts); files are put and fetched through envd's files API at workdir-relative paths.
//
// Reopening (`open`): the info route says whether the sandbox exists (404: gone, undefined).
// Then `/connect` (which also resumes a paused one). A server without `/connect` answers 404
// there although the sandbox exists; the provider then falls back for good: resume when paused,
// and build the client from the envd access token and domain of the info. Every decision is by
// HTTP status or SDK error class: a command that ran is never run again because of some text.
import {
  ALL_TRAFFIC,
  FileNotFoundError,
  NotFoundError,
  Sandbox as SdkSandbox,
  SandboxError as SdkError,
  SandboxNotFoundError,
  type ConnectionOpts,
} from 'e2b';
import { posix } from 'node:path';
import { pino, type Logger } from 'pino';
import { startRemote, type RemoteCommand, type StartSpec } from './e2b-command.ts';
import { createE2bRest, type E2bConnection, type E2bRest } from './e2b-rest.ts';
import { SandboxError } from './errors.ts';
import { DEFAULT_LIMITS } from './local.ts';
import { relativeParts } from './paths.ts';
import type {
  BackgroundProcess,
  CommandSpec,
  CreateSandboxOptions,
  ExecLimits,
  ExecOptions,
  ExecResult,
  InteractiveOptions,
  InteractiveProcess,
  GetFileOptions,
  Sandbox,
  SandboxProvider,
  SessionKey,
  SpawnOptions,
} from './provider.ts';

export interface E2bSandboxOptions {
  readonly apiKey: string;
  /** REST API URL; default `https://api.<domain>`. */
  readonly apiUrl?: string;
  /** Sandbox domain: envd of sandbox `<id>` is `https://49983-<id>.<domain>`. */
  readonly domain: string;
  /** One URL serving every sandbox's envd (a proxy, a test server); default per sandbox. */
  readonly sandboxUrl?: string;
  readonly template: string;
  /** Absolute folder inside the sandbox where commands run and files go. */
  readonly workdir: string;
  readonly requestTimeoutMs: number;
  /** E2B's own kill timer, set at create and renewed at open. */
  readonly sandboxTimeoutSec: number;
  /** Hosts every sandbox may reach; with none, all egress is denied. */
  readonly allowedDomains?: readonly string[];
  readonly limits?: Partial<ExecLimits>;
  readonly logger?: Logger;
}

export interface E2bSandboxProvider extends SandboxProvider {
  readonly kind: 'e2b';
  /** Whether the server has `/connect`: unknown until an open() needed it. */
  readonly connectRoute: boolean | undefined;
}

/** Metadata keys holding the session key on the E2B side. */
const META = { project: 'toolmesh_project', agent: 'toolmesh_agent', session: 'toolmesh_session' };

export function createE2bSandboxProvider(options: E2bSandboxOptions): E2bSandboxProvider {
  return new E2bProvider(options);
}

/** A 404 from the API, however the SDK classed it (JSON body: SandboxNotFoundError; a
 * router's plain-text 404: SandboxError with statusCode). */
function isApi404(err: unknown): boolean {
  if (err instanceof SandboxNotFoundError) return true;
  return err instanceof SdkError && (err as { statusCode?: unknown }).statusCode === 404;
}

class E2bProvider implements E2bSandboxProvider {
  readonly kind = 'e2b' as const;
  readonly options: E2bSandboxOptions;
  readonly logger: Logger;
  readonly limits: ExecLimits;
  readonly connection: ConnectionOpts & { sandboxUrl?: string };
  readonly rest: E2bRest;
  readonly running = new Set<RemoteCommand>();
  #connectRoute: boolean | undefined;
  #closed = false;

  constructor(options: E2bSandboxOptions) {
    this.options = options;
    this.logger = (options.logger ?? pino({ level: 'silent' })).child({ component: 'sandbox.e2b' });
    this.limits = { ...DEFAULT_LIMITS, ...options.limits };
    const apiUrl = options.apiUrl || `https://api.${options.domain}`;
    this.connection = {
      apiKey: options.apiKey,
      apiUrl,
      domain: options.domain,
      requestTimeoutMs: options.requestTimeoutMs,
      ...(options.sandboxUrl ? { sandboxUrl: options.sandboxUrl } : {}),
    };
    this.rest = createE2bRest({
      apiUrl,
      apiKey: options.apiKey,
      requestTimeoutMs: options.requestTimeoutMs,
    });
  }

  get connectRoute(): boolean | undefined {
    return this.#connectRoute;
  }

  get closed(): boolean {
    return this.#closed;
  }

  async create(options: CreateSandboxOptions): Promise<Sandbox> {
    this.#assertOpen();
    const allowed = [
      ...(this.options.allowedDomains ?? []),
      ...(options.network?.allowedDomains ?? []),
    ];
    const sdk = await SdkSandbox.create(this.options.template, {
      ...this.connection,
      timeoutMs: this.options.sandboxTimeoutSec * 1000,
      metadata: {
        [META.project]: options.key.project,
        [META.agent]: options.key.agent,
        [META.session]: options.key.session,
      },
      // Deny-by-default egress, as the local provider: only the allowed hosts are reachable.
      network: { denyOut: [ALL_TRAFFIC], ...(allowed.length > 0 ? { allowOut: allowed } : {}) },
    }).catch((err: unknown) => {
      throw new SandboxError('unavailable', `E2B could not create a sandbox: ${String(err)}`, {
        cause: err,
      });
    });
    try {
      await sdk.files.makeDir(this.options.workdir);
    } catch (err) {
      await SdkSandbox.kill(sdk.sandboxId, this.connection).catch(() => false);
      throw new SandboxError('unavailable', `could not make the workdir: ${String(err)}`, {
        cause: err,
      });
    }
    this.logger.debug({ sandboxId: sdk.sandboxId, key: options.key }, 'sandbox created');
    return new E2bSandbox(this, sdk, { ...options.key });
  }

  async open(sandboxId: string): Promise<Sandbox | undefined> {
    this.#assertOpen();
    const info = await this.rest.info(sandboxId);
    if (!info) return undefined;
    const key: SessionKey = {
      project: info.metadata[META.project] ?? '',
      agent: info.metadata[META.agent] ?? '',
      session: info.metadata[META.session] ?? '',
    };
    if (this.#connectRoute !== false) {
      try {
        const sdk = await SdkSandbox.connect(sandboxId, {
          ...this.connection,
          timeoutMs: this.options.sandboxTimeoutSec * 1000,
        });
        this.#connectRoute = true;
        return new E2bSandbox(this, sdk, key);
      } catch (err) {
        if (!isApi404(err)) throw wrapApiError(err, 'connect to', sandboxId);
      }
      // 404 on connect: either the sandbox went away a moment ago, or the route does not exist.
      if (!(await this.rest.info(sandboxId))) return undefined;
      this.#connectRoute = false;
      this.logger.info({ sandboxId }, 'the E2B server has no /connect route: using info + resume');
    }
    const connection = await this.#reachWithoutConnect(info);
    if (!connection) return undefined;
    const sdk = new SdkSandbox({
      ...this.connection,
      sandboxId,
      envdVersion: connection.envdVersion,
      ...(connection.envdAccessToken ? { envdAccessToken: connection.envdAccessToken } : {}),
      ...(connection.domain ? { sandboxDomain: connection.domain } : {}),
    });
    return new E2bSandbox(this, sdk, key);
  }

  /** The fallback: resume a paused sandbox, else renew a running one's timeout. */
  async #reachWithoutConnect(
    info: E2bConnection & { state: string },
  ): Promise<E2bConnection | undefined> {
    if (info.state === 'paused') {
      const resumed = await this.rest.resume(info.sandboxId, this.options.sandboxTimeoutSec);
      if (resumed === undefined) return undefined;
      // 409: someone else resumed it meanwhile; the info's token still holds.
      return resumed === 'running' ? info : resumed;
    }
    try {
      await SdkSandbox.setTimeout(
        info.sandboxId,
        this.options.sandboxTimeoutSec * 1000,
        this.connection,
      );
    } catch (err) {
      if (isApi404(err)) return undefined;
      throw wrapApiError(err, 'renew the timeout of', info.sandboxId);
    }
    return info;
  }

  async destroy(sandboxId: string): Promise<void> {
    // kill() answers false for a sandbox that is already gone: not an error.
    await SdkSandbox.kill(sandboxId, this.connection).catch((err: unknown) => {
      throw wrapApiError(err, 'kill', sandboxId);
    });
    this.logger.debug({ sandboxId }, 'sandbox destroyed');
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    // Commands this process started die with it, as in the local provider; sandboxes live on.
    await Promise.all([...this.running].map((command) => command.kill().catch(() => undefined)));
  }

  #assertOpen(): void {
    if (this.#closed) throw new SandboxError('closed', 'the e2b sandbox provider is closed');
  }
}

function wrapApiError(err: unknown, what: string, sandboxId: string): SandboxError {
  return new SandboxError(
    'unavailable',
    `E2B could not ${what} sandbox ${sandboxId}: ${String(err)}`,
    {
      cause: err,
    },
  );
}

class E2bSandbox implements Sandbox {
  readonly id: string;
  readonly key: SessionKey;
  readonly workdir: string;
  readonly #provider: E2bProvider;
  readonly #sdk: SdkSandbox;
  #closed = false;

  constructor(provider: E2bProvider, sdk: SdkSandbox, key: SessionKey) {
    this.#provider = provider;
    this.#sdk = sdk;
    this.id = sdk.sandboxId;
    this.key = key;
    this.workdir = provider.options.workdir;
  }

  async exec(command: CommandSpec, options: ExecOptions): Promise<ExecResult> {
    return (await this.#start(command, options)).done;
  }

  async spawn(command: CommandSpec, options: SpawnOptions = {}): Promise<BackgroundProcess> {
    const running = await this.#start(command, options);
    return {
      pid: running.pid,
      startedAt: running.startedAt,
      // A pid inside a VM: no host /proc entry can prove anything about it.
      procStartTime: undefined,
      wait: () => running.done,
      kill: () => running.kill(),
    };
  }

  async interact(command: CommandSpec, options: InteractiveOptions): Promise<InteractiveProcess> {
    const { onStdout, onStderr, ...rest } = options;
    const running = await this.#start(command, rest, { onStdout, onStderr });
    return {
      pid: running.pid,
      startedAt: running.startedAt,
      procStartTime: undefined,
      wait: () => running.done,
      kill: () => running.kill(),
      write: (data) => running.write(data),
      closeStdin: () => running.closeStdin(),
    };
  }

  async putFile(path: string, data: string | Uint8Array): Promise<void> {
    const target = this.#inside(path);
    await this.#sdk.files
      .write(target, typeof data === 'string' ? data : new Blob([new Uint8Array(data)]))
      .catch((err: unknown) => {
        throw fileError(err, path);
      });
  }

  async getFile(path: string, options: GetFileOptions = {}): Promise<Buffer> {
    const target = this.#inside(path);
    const bytes = await this.#sdk.files.read(target, { format: 'bytes' }).catch((err: unknown) => {
      throw fileError(err, path);
    });
    // envd has no size-first read: the limit is checked once the bytes are here.
    if (options.maxBytes !== undefined && bytes.byteLength > options.maxBytes) {
      throw new SandboxError(
        'too_large',
        `${JSON.stringify(path)} is ${bytes.byteLength} bytes, over the limit of ${options.maxBytes}`,
        { details: { size_bytes: bytes.byteLength, limit_bytes: options.maxBytes } },
      );
    }
    return Buffer.from(bytes);
  }

  endpointOf(port: number): string {
    return this.#sdk.getHost(port);
  }

  close(): Promise<void> {
    this.#closed = true;
    return Promise.resolve();
  }

  async destroy(): Promise<void> {
    this.#closed = true;
    await this.#provider.destroy(this.id);
  }

  /** The absolute sandbox path of a workdir-relative file path; escapes are refused. */
  #inside(rel: string): string {
    this.#assertOpen();
    const parts = relativeParts(rel);
    if (parts.length === 0) {
      throw new SandboxError(
        'path_escape',
        `path ${JSON.stringify(rel)} names the workdir itself, not a file`,
      );
    }
    return posix.join(this.workdir, ...parts);
  }

  async #start(
    command: CommandSpec,
    options: SpawnOptions,
    interactive?: StartSpec['interactive'],
  ): Promise<RemoteCommand> {
    this.#assertOpen();
    const limits: ExecLimits = { ...this.#provider.limits, ...options.limits };
    const cwd = posix.join(this.workdir, ...relativeParts(options.cwd ?? '.'));
    const running = await startRemote({
      sdk: this.#sdk,
      command,
      cwd,
      options,
      interactive,
      stdoutBytes: limits.stdoutBytes,
      stderrBytes: limits.stderrBytes,
      requestTimeoutMs: this.#provider.options.requestTimeoutMs,
    }).catch(async (err: unknown) => {
      if (err instanceof SandboxError) throw err;
      // The command never got a pid, so it did not run. Only the API's 404 says the sandbox is
      // gone (a caller may then make a new one); anything else stays an unavailable sandbox.
      const gone = (await this.#provider.rest.info(this.id).catch(() => 'unknown')) === undefined;
      throw new SandboxError(
        gone ? 'closed' : 'unavailable',
        gone
          ? `sandbox ${this.id} is gone (the E2B API answers 404); the command did not start`
          : `could not start the command: ${String(err)}`,
        { cause: err, details: { gone, started: false } },
      );
    });
    const set = this.#provider.running;
    set.add(running);
    const forget = (): void => void set.delete(running);
    running.done.then(forget, forget);
    return running;
  }

  #assertOpen(): void {
    if (this.#closed || this.#provider.closed) {
      throw new SandboxError('closed', `sandbox ${this.id} is closed`);
    }
  }
}

function fileError(err: unknown, path: string): Error {
  if (err instanceof FileNotFoundError || err instanceof NotFoundError) {
    return new SandboxError('not_found', `${JSON.stringify(path)} does not exist in the workdir`, {
      cause: err,
    });
  }
  if (err instanceof SandboxError) return err;
  return new SandboxError(
    'unavailable',
    `file transfer of ${JSON.stringify(path)} failed: ${String(err)}`,
    {
      cause: err,
    },
  );
}
