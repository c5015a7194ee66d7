// The one sandbox-runtime of this process. SandboxManager is a process-wide singleton (its HTTP
// and SOCKS proxies, the seccomp violation monitor), so it is initialised once, on first use, and
// shared by every local provider of the process; providers must agree on its configuration.
//
// Denials: the runtime records blocked writes (its seccomp observer, for paths outside the
// write roots given here) and refused connections (its proxies) in a violation store, keyed by
// the commandId each wrap was given. We tap the store as events arrive, so a flood from one
// command cannot evict another's before it is read.
import { existsSync, realpathSync } from 'node:fs';
import { chmod, copyFile, mkdir, rename } from 'node:fs/promises';
import { basename, dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxManager, type SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import { SandboxError } from './errors.ts';
import { recordOwner } from './orphans.ts';
import type { SandboxDenial } from './provider.ts';
import { systemReadPaths } from './read-policy.ts';
import type { SandboxUser } from './sandbox-user.ts';
import { DEFAULT_WRAP_CACHE_TTL_MS, WrapCache } from './wrap-cache.ts';

/**
 * The runtime's seccomp helper runs inside the sandbox, from the runtime's package folder. That
 * folder sits in the checkout, which sandboxes may not read (reads are an allow-list): the
 * helper is re-allowed for reading by its exact path, or every command would fail with
 * "apply-seccomp: No such file". When commands run as another user (the service is root), a
 * copy under the sandboxes' folder is used, since that user may not enter the checkout.
 */
const VENDOR = join(
  dirname(fileURLToPath(import.meta.resolve('@anthropic-ai/sandbox-runtime'))),
  '..',
  'vendor',
);
const vendorFile = (...parts: string[]): string | undefined => {
  const path = join(VENDOR, ...parts);
  return existsSync(path) ? realpathSync(path) : undefined;
};
const SECCOMP_HELPER = vendorFile(
  'seccomp',
  process.arch === 'arm64' ? 'arm64' : 'x64',
  'apply-seccomp',
);
/** Bound into every sandbox by the runtime (JAVA_TOOL_OPTIONS names it): copied like the helper. */
const JAVA_PROXY_AGENT = vendorFile('java-proxy-agent', 'srt-proxy-agent.jar');

export interface RuntimeSettings {
  /** Folder of every sandbox: writes under it are not reported as violations. */
  readonly rootDir: string;
  readonly deniedDomains: readonly string[];
  /**
   * The host user commands run as, when it is not this process's (the service runs as root):
   * the runtime's sockets are opened to it and its seccomp helper is copied where it can reach.
   */
  readonly sandboxUser?: SandboxUser;
  /** How long one wrap of a policy is reused (0: wrap every command). Default 5 s. */
  readonly wrapCacheTtlMs?: number;
}

export interface WrapRequest {
  /** The fixed launcher script; never caller text. */
  readonly script: string;
  /** 128 random bits: the key of the command's denials and of its network allow-list. */
  readonly commandId: string;
  readonly workdir: string;
  /** Host paths the command may read besides the system allow-list (`read-policy.ts`). */
  readonly allowRead: readonly string[];
  /** Size of the command's private /tmp (a tmpfs): the sandbox's disk limit. */
  readonly tmpBytes?: number;
}

export interface Runtime {
  /**
   * The shell line that runs `script` in bwrap with the command's policy, for `bash -c`, and the
   * function to call once the command has ended (it lets the runtime remove the mount points it
   * made for denies, once no command of the process still needs them).
   */
  wrap(request: WrapRequest): Promise<{ line: string; ended: () => void }>;
  /** Lets one command reach more hosts while it runs; call the result when it has ended. */
  allowHosts(commandId: string, domains: readonly string[]): () => void;
  /** Collects the denials reported under `commandId` until the returned function is called. */
  collect(commandId: string, max: number): () => SandboxDenial[];
  release(): Promise<void>;
}

let current:
  { key: string; users: number; ready: Promise<Started>; taps: Map<string, Tap> } | undefined;

interface Started {
  /** Runtime files every command must reach: the seccomp helper, the proxy bridge sockets. */
  readonly runtimeReads: readonly string[];
  /** Removes this process's owner record (orphans.ts) once the runtime is reset. */
  readonly forgetOwner: () => Promise<void>;
}

interface Tap {
  readonly encoded: string;
  readonly max: number;
  readonly seen: Set<string>;
  readonly denials: SandboxDenial[];
}

export async function acquireRuntime(settings: RuntimeSettings): Promise<Runtime> {
  const key = JSON.stringify({
    rootDir: settings.rootDir,
    deniedDomains: settings.deniedDomains,
    sandboxUser: settings.sandboxUser ?? null,
  });
  if (current !== undefined && current.key !== key) {
    throw new SandboxError(
      'runtime_conflict',
      `sandbox-runtime is already initialised in this process with ${current.key}; asked for ${key}`,
    );
  }
  if (current === undefined) {
    const taps = new Map<string, Tap>();
    current = { key, users: 0, ready: start(settings, taps), taps };
  }
  const state = current;
  state.users++;
  let started: Started;
  try {
    started = await state.ready;
  } catch (err) {
    state.users--;
    if (current === state) current = undefined;
    throw err;
  }
  let released = false;
  const wrapOnce = async (request: WrapRequest) => {
    const line = await SandboxManager.wrapWithSandbox(
      request.script,
      '/bin/bash',
      {
        // Reads are an allow-list: everything under / is hidden but the system folders, the
        // workdir, the runtime's own files and what the provider adds (see read-policy.ts).
        filesystem: {
          denyRead: ['/', '/sys/fs/cgroup'],
          allowRead: [
            ...systemReadPaths(),
            ...started.runtimeReads,
            ...request.allowRead,
            request.workdir,
          ],
          allowWrite: [request.workdir],
          denyWrite: [],
        },
      },
      undefined,
      { commandId: request.commandId, commandText: `toolmesh:${request.commandId}` },
    );
    let ended = false;
    return {
      line: sizedTmp(readOnlyTmpfs(line), request.tmpBytes),
      ended: () => {
        if (ended) return;
        ended = true;
        // Reference-counted by the runtime: cleans up when the last running command ends.
        SandboxManager.cleanupAfterCommand();
      },
    };
  };
  const cache = new WrapCache(wrapOnce, settings.wrapCacheTtlMs ?? DEFAULT_WRAP_CACHE_TTL_MS);
  return {
    wrap: (request) => cache.wrap(request),
    allowHosts(commandId, domains) {
      if (domains.length === 0) return () => undefined;
      SandboxManager.registerCommandNetworkLists(commandId, { allowedDomains: [...domains] });
      return () => SandboxManager.unregisterCommandNetworkLists(commandId);
    },
    collect(commandId, max) {
      const tap: Tap = {
        encoded: Buffer.from(commandId).toString('base64'),
        max,
        seen: new Set(),
        denials: [],
      };
      state.taps.set(tap.encoded, tap);
      return () => {
        state.taps.delete(tap.encoded);
        return tap.denials;
      };
    },
    async release() {
      if (released) return;
      released = true;
      cache.clear();
      state.users--;
      if (state.users === 0 && current === state) {
        current = undefined;
        await SandboxManager.reset();
        await started.forgetOwner();
      }
    },
  };
}

async function start(settings: RuntimeSettings, taps: Map<string, Tap>): Promise<Started> {
  const deps = await SandboxManager.checkDependenciesAsync();
  if (deps.errors.length > 0) {
    throw new SandboxError(
      'unavailable',
      `sandbox-runtime cannot run here: ${deps.errors.join('; ')} (apt-get install bubblewrap socat ripgrep)`,
    );
  }
  // A sandbox user may not enter the checkout (a clone in /root or in a 0700 folder): what the
  // runtime binds in from its package folder is copied to where that user can reach it.
  const copied = (source: string | undefined) =>
    settings.sandboxUser === undefined || source === undefined
      ? Promise.resolve(source)
      : copyRuntimeFile(source, settings.rootDir);
  const helper = await copied(SECCOMP_HELPER);
  const javaAgent = await copied(JAVA_PROXY_AGENT);
  const config: SandboxRuntimeConfig = {
    network: { allowedDomains: [], deniedDomains: [...settings.deniedDomains] },
    // Only the violation monitor reads these: each command brings its own filesystem policy.
    filesystem: { denyRead: [], allowWrite: [settings.rootDir], denyWrite: [] },
    ...(helper === undefined ? {} : { seccomp: { applyPath: helper } }),
    ...(javaAgent === undefined ? {} : { javaAgentJarPath: javaAgent }),
  };
  try {
    // enableLogMonitor: on Linux, the seccomp observer that reports blocked writes.
    await SandboxManager.initialize(config, undefined, true);
  } catch (err) {
    throw new SandboxError('unavailable', `sandbox-runtime failed to start: ${String(err)}`, {
      cause: err,
    });
  }
  const observer = await observeSocketPath();
  const sockets = [
    SandboxManager.getLinuxHttpSocketPath(),
    SandboxManager.getLinuxSocksSocketPath(),
    observer,
  ].filter((p): p is string => p !== undefined);
  if (settings.sandboxUser !== undefined) {
    // Made by root with mode 0755: a unix socket takes write permission to connect, and bwrap
    // binds it with the sandbox user's rights. The observer's sits in a 0700 folder of its own
    // (`srt-obs-*`), which is opened for passing through; never the folder of the others
    // (the host's /tmp itself).
    for (const socket of sockets) await chmod(socket, 0o777);
    if (observer !== undefined && basename(dirname(observer)).startsWith('srt-obs-')) {
      await chmod(dirname(observer), 0o711);
    }
  }
  // The host-side bridges are our children but in no sandbox: recorded, so that the next
  // instance or a reaper can end them if this process dies without closing (orphans.ts).
  const forgetOwner = await recordOwner(
    settings.rootDir,
    [SandboxManager.getLinuxHttpSocketPath(), SandboxManager.getLinuxSocksSocketPath()].filter(
      (p): p is string => p !== undefined,
    ),
  );
  const store = SandboxManager.getSandboxViolationStore();
  let seen = store.getTotalCount();
  store.subscribe((violations) => {
    const total = store.getTotalCount();
    const fresh = violations.slice(Math.max(0, violations.length - (total - seen)));
    seen = total;
    for (const violation of fresh) {
      const tap =
        violation.encodedCommand === undefined ? undefined : taps.get(violation.encodedCommand);
      if (tap === undefined || tap.seen.has(violation.line) || tap.denials.length >= tap.max)
        continue;
      tap.seen.add(violation.line);
      tap.denials.push(parseDenial(violation.line));
    }
  });
  return {
    runtimeReads: [...(helper === undefined ? [] : [helper]), ...new Set(sockets)],
    forgetOwner,
  };
}

/**
 * Where the runtime's write observer listens: its wrapped lines bind it in, but a tmpfs over
 * the host's /tmp (reads are an allow-list) would hide it, so it is re-allowed by name. The
 * runtime does not expose it; one throwaway wrap does.
 */
async function observeSocketPath(): Promise<string | undefined> {
  try {
    const line = await SandboxManager.wrapWithSandbox('true', '/bin/bash', {
      filesystem: { denyRead: [], allowWrite: [], denyWrite: [] },
    });
    const match = /SRT_OBSERVE_SOCK '?([^' ]+)'?/.exec(line);
    return match?.[1];
  } finally {
    SandboxManager.cleanupAfterCommand();
  }
}

/**
 * A runtime file (the seccomp helper, the JVM proxy agent), copied under the sandboxes' folder
 * (root-owned, 0755) for a sandbox user who cannot enter the checkout (a clone in /root, 0700).
 * Replaced atomically, as a running command may be executing the previous copy.
 */
async function copyRuntimeFile(source: string, rootDir: string): Promise<string> {
  const dir = join(rootDir, '.runtime');
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await chmod(dir, 0o755);
  const target = join(dir, basename(source));
  const staging = `${target}.${process.pid}`;
  await copyFile(source, staging);
  await chmod(staging, 0o755);
  await rename(staging, target);
  return target;
}

/**
 * The runtime hides a denied folder under a tmpfs, which the command could write to (a private,
 * throwaway one, but a write outside the workdir should fail as it always did, with EROFS): each
 * is remounted read-only once every mount is in place (before bwrap's own /dev), except the one
 * on /tmp, the command's private /tmp. Tokens are reused as the runtime quoted them. A line
 * whose mounts went through an arguments file (too long for one argument) is left as it is.
 */
export function readOnlyTmpfs(line: string): string {
  const at = line.indexOf(' --dev /dev ');
  if (at < 0) return line;
  // One shell word as shell-quote writes it: quoted runs, escapes and plain characters.
  const word = /(?:'[^']*'|"(?:\\.|[^"\\])*"|\\.|[^\s'"\\])+/.source;
  const tokens = [...line.slice(0, at).matchAll(new RegExp(` --tmpfs (${word})`, 'g'))]
    .map((m) => m[1]!)
    .filter((token) => token !== '/tmp');
  if (tokens.length === 0) return line;
  const remounts = [...new Set(tokens)].map((token) => ` --remount-ro ${token}`).join('');
  return `${line.slice(0, at)}${remounts}${line.slice(at)}`;
}

/**
 * Caps the command's private /tmp (the runtime mounts it as a tmpfs of half the host's memory):
 * bwrap's `--size` applies to the `--tmpfs` that follows it.
 */
export function sizedTmp(line: string, bytes: number | undefined): string {
  if (bytes === undefined) return line;
  return line.replace(' --tmpfs /tmp ', ` --size ${bytes} --tmpfs /tmp `);
}

/** Lines look like `deny openat /etc/x` or `deny network-outbound host:443 (reason)`. */
export function parseDenial(line: string): SandboxDenial {
  const match = /^deny (\S+) (.*)$/.exec(line);
  if (match === null)
    return { kind: 'other', operation: 'unknown', target: line, source: 'runtime' };
  const operation = match[1]!;
  const kind = operation.startsWith('network') ? 'network' : 'filesystem';
  return { kind, operation, target: match[2]!, source: 'runtime' };
}
