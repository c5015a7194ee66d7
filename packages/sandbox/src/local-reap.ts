// Destroying `local` sandboxes from a process that did not create them: the sandbox-reaper.
//
// A full LocalSandboxProvider starts sandbox-runtime's proxies, which a reaper never needs; this
// is the destroy half alone, working from the folder and the host's process table:
// - processes recorded for the sandbox (task and job heads: pid and start time) are killed with
//   their process group, but only when pid, start time and command line prove them ours;
// - the sandbox's cgroups (`<base>/<sandbox id>` of pids, memory and cpu, shared by every
//   command any instance ran in it) are emptied and removed;
// - without pids cgroups, a /proc scan kills each bwrap whose command line names the sandbox's
//   folder (its random id makes that a proof of its own);
// - the folder `<rootDir>/<sandbox id>` is removed.
// Every step tolerates a sandbox that is already (partly) gone: destroy is idempotent.
import { readdir, realpath, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { pino, type Logger } from 'pino';
import { probeSandboxCgroups } from './cgroup.ts';
import { isOurProcess, readProc, SANDBOX_COMMAND } from './proc-proof.ts';

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
        for (const pid of await bwrapsNaming(`${dir}/`)) killed += await killGroup(pid);
      }
      await rm(dir, { recursive: true, force: true });
      log.debug({ sandboxId, killed }, 'sandbox destroyed');
    },
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

/**
 * Live bwrap processes whose command line contains `text`, and the launchers about to become
 * one (`[sh -c <join cgroup> ...] bash --norc --noprofile -c 'bwrap ...'`, before their execs):
 * a command started a moment ago must not slip through between the two.
 */
async function bwrapsNaming(text: string): Promise<number[]> {
  const found: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const argv = (await readProc(Number(entry)))?.argv ?? [];
    const cmd = argv[0] ?? '';
    if (cmd === SANDBOX_COMMAND || cmd.endsWith(`/${SANDBOX_COMMAND}`)) {
      if (argv.some((a) => a.includes(text))) found.push(Number(entry));
    } else if (cmd === '/bin/bash' || cmd === '/bin/sh' || cmd === '/usr/bin/setpriv') {
      const line = argv[argv.lastIndexOf('-c') + 1] ?? '';
      if (line.startsWith(`${SANDBOX_COMMAND} `) && line.includes(text)) found.push(Number(entry));
    }
  }
  return found;
}
