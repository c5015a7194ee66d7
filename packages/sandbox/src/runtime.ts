// The one sandbox-runtime of this process. SandboxManager is a process-wide singleton (its HTTP
// and SOCKS proxies, the seccomp violation monitor), so it is initialised once, on first use, and
// shared by every local provider of the process; providers must agree on its configuration.
//
// Denials: the runtime records blocked writes (its seccomp observer, for paths outside the
// write roots given here) and refused connections (its proxies) in a violation store, keyed by
// the commandId each wrap was given. We tap the store as events arrive, so a flood from one
// command cannot evict another's before it is read.
import { existsSync, realpathSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { SandboxManager, type SandboxRuntimeConfig } from '@anthropic-ai/sandbox-runtime';
import { SandboxError } from './errors.ts';
import type { SandboxDenial } from './provider.ts';
import { DEFAULT_WRAP_CACHE_TTL_MS, WrapCache } from './wrap-cache.ts';

/**
 * The runtime's seccomp helper runs inside the sandbox, from the runtime's package folder. That
 * folder sits in the checkout, which lies under a denied read root whenever the checkout is in
 * a home (`/root/toolmesh` as root, `~/toolmesh` as a user): the helper is re-allowed for
 * reading by its exact path, or every command would fail with "apply-seccomp: No such file".
 */
const SECCOMP_HELPER: string | undefined = (() => {
  const arch = process.arch === 'arm64' ? 'arm64' : 'x64';
  const entry = fileURLToPath(import.meta.resolve('@anthropic-ai/sandbox-runtime'));
  const helper = join(dirname(entry), '..', 'vendor', 'seccomp', arch, 'apply-seccomp');
  return existsSync(helper) ? realpathSync(helper) : undefined;
})();

export interface RuntimeSettings {
  /** Folder of every sandbox: writes under it are not reported as violations. */
  readonly rootDir: string;
  readonly deniedDomains: readonly string[];
  /** How long one wrap of a policy is reused (0: wrap every command). Default 5 s. */
  readonly wrapCacheTtlMs?: number;
}

export interface WrapRequest {
  /** The fixed launcher script; never caller text. */
  readonly script: string;
  /** 128 random bits: the key of the command's denials and of its network allow-list. */
  readonly commandId: string;
  readonly workdir: string;
  /** Host paths the command may not read (the workdir is re-allowed beneath them). */
  readonly denyRead: readonly string[];
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
  { key: string; users: number; ready: Promise<void>; taps: Map<string, Tap> } | undefined;

interface Tap {
  readonly encoded: string;
  readonly max: number;
  readonly seen: Set<string>;
  readonly denials: SandboxDenial[];
}

export async function acquireRuntime(settings: RuntimeSettings): Promise<Runtime> {
  const key = JSON.stringify({ rootDir: settings.rootDir, deniedDomains: settings.deniedDomains });
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
  try {
    await state.ready;
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
        filesystem: {
          denyRead: [...request.denyRead],
          allowRead: [request.workdir, ...(SECCOMP_HELPER === undefined ? [] : [SECCOMP_HELPER])],
          allowWrite: [request.workdir],
          denyWrite: [],
        },
      },
      undefined,
      { commandId: request.commandId, commandText: `toolmesh:${request.commandId}` },
    );
    let ended = false;
    return {
      line,
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
      }
    },
  };
}

async function start(settings: RuntimeSettings, taps: Map<string, Tap>): Promise<void> {
  const deps = await SandboxManager.checkDependenciesAsync();
  if (deps.errors.length > 0) {
    throw new SandboxError(
      'unavailable',
      `sandbox-runtime cannot run here: ${deps.errors.join('; ')} (apt-get install bubblewrap socat ripgrep)`,
    );
  }
  const config: SandboxRuntimeConfig = {
    network: { allowedDomains: [], deniedDomains: [...settings.deniedDomains] },
    // Only the violation monitor reads these: each command brings its own filesystem policy.
    filesystem: { denyRead: [], allowWrite: [settings.rootDir], denyWrite: [] },
  };
  try {
    // enableLogMonitor: on Linux, the seccomp observer that reports blocked writes.
    await SandboxManager.initialize(config, undefined, true);
  } catch (err) {
    throw new SandboxError('unavailable', `sandbox-runtime failed to start: ${String(err)}`, {
      cause: err,
    });
  }
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
