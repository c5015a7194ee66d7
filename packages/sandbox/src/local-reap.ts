// Destroying `local` sandboxes from a process that did not create them: the sandbox-reaper.
//
// A full LocalSandboxProvider starts sandbox-runtime's proxies, which a reaper never needs; this
// is the destroy half alone, working from the folder and the host's process table:
// - processes recorded for the sandbox (task and job heads: pid and start time) are killed with
//   their process group, but only when pid, start time and command line prove them ours;
// - the sandbox's cgroups (`<base>/<sandbox id>` of pids, memory and cpu, shared by every
//   command any instance ran in it) are emptied and removed;
// - without pids cgroups, a /proc scan kills each bwrap whose command line names the sandbox's
//   folder (its random id makes that a proof of its own), host-side leaders first (orphans.ts);
// - the folder `<rootDir>/<sandbox id>` is removed.
// Every step tolerates a sandbox that is already (partly) gone: destroy is idempotent.
import { realpath, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import { probeSandboxCgroups } from './cgroup.ts';
import { killOutermostFirst, sandboxProcesses, sweepOrphans } from './orphans.ts';
import { isOurProcess, readProc } from './proc-proof.ts';

/** The local provider's sandbox id shape (see local.ts): nothing else is ever deleted. */
const LOCAL_ID = /^lsb_[0-9a-f]{20}$/;

export interface RecordedProcess {
  readonly pid: number;
  readonly procStartTime: string;
}

export interface LocalReapOptions {
  /** The folder holding every sandbox (the skills service's sandbox.root_dir). */
  readonly rootDir: string;
  /** Processes recorded for a sandbox (task and job heads); each is killed once proven ours. */
  readonly processesOf?: (sandboxId: string) => Promise<readonly RecordedProcess[]>;
  /** Use the pids cgroups when there are any (default true). */
  readonly pidsCgroup?: boolean;
  readonly logger?: Logger;
}

/** What a reaper needs of the local provider: destroy by id. Fits a `SandboxProvider` slot. */
export interface LocalSandboxReaper {
  readonly kind: 'local';
  readonly rootDir: string;
  /** Kills every process of the sandbox and deletes its folder; a missing one is no error. */
  destroy(sandboxId: string): Promise<void>;
  /**
   * Kills what providers of this root that died without closing left running (their runtime's
   * socat bridges, bwraps whose service is gone; see orphans.ts). Returns how many.
   */
  sweep(): Promise<number>;
  close(): Promise<void>;
}

export async function createLocalSandboxReaper(
  options: LocalReapOptions,
): Promise<LocalSandboxReaper> {
  const log = (options.logger ?? pino({ level: 'silent' })).child({ component: 'sandbox.reap' });
  const root = resolve(options.rootDir);
  // The provider records paths under the real root; bwrap's command lines carry those.
  const rootDir = await realpath(root).catch(() => root);
  const cgroups =
    options.pidsCgroup === false
      ? undefined
      : await probeSandboxCgroups({ memory: true, cpu: true });
  return {
    kind: 'local',
    rootDir,
    destroy: async (sandboxId) => {
      if (!LOCAL_ID.test(sandboxId)) return;
      const dir = join(rootDir, sandboxId);
      let killed = 0;
      for (const p of (await options.processesOf?.(sandboxId)) ?? []) {
        if (await isOurProcess(p.pid, p.procStartTime)) killed += await killGroup(p.pid);
      }
      if (cgroups) {
        await cgroups.kill(sandboxId);
        await cgroups.remove(sandboxId);
      } else {
        killed += killOutermostFirst(await sandboxProcesses(`${dir}/`));
      }
      await rm(dir, { recursive: true, force: true });
      log.debug({ sandboxId, killed }, 'sandbox destroyed');
    },
    sweep: () => sweepOrphans(rootDir, log),
    close: async () => {
      await cgroups?.release();
    },
  };
}

/** Kills a proven process and, when it leads one, its whole group. 1 when a signal was sent. */
async function killGroup(pid: number): Promise<number> {
  const info = await readProc(pid);
  if (!info) return 0;
  try {
    // The launcher makes the bwrap a group leader: the group is the host side of the command,
    // and bwrap's pid namespace dies with it.
    process.kill(info.pgrp === pid ? -pid : pid, 'SIGKILL');
    return 1;
  } catch {
    return 0; // Gone in between.
  }
}
