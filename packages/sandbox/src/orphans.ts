// What a local provider's process leaves running when it dies without closing (SIGKILL, an OOM
// kill), and how the next instance or a reaper finds it by its own marks.
//
// - sandbox-runtime's host-side socat bridges (`UNIX-LISTEN:/tmp/claude-http-*.sock`): plain
//   children of the service, in no sandbox and no cgroup of ours, so nothing ends them. Their
//   command line names no sandbox, and other programs on the host run the runtime too, so they
//   are never found by name: each process that starts the runtime writes an owner record
//   `<rootDir>/.owners/<pid>.json` (its pid and start time, each bridge's pid, start time and
//   socket) and removes it when it closes. A record whose process is gone names what to kill,
//   each proven by pid, start time and command (socat) before the signal.
// - bwraps of the root's sandboxes, and their launchers (sh, setpriv, bash exec'd in turn into
//   bwrap), whose command line names `<rootDir>/lsb_…` (a random id under our root). Normally
//   bwrap's --die-with-parent ends them with the service, but it is set by bwrap itself after
//   it starts (a service killed in between leaves it running), and a line bash cannot exec
//   (it forks) leaves bwrap the child of a bash that outlives the service. Every such process
//   is a direct child of the provider's process: one whose parent is not a live owner of this
//   root is an orphan.
//
// Killing: the outermost process of each tree first (the host-side leader, with its group),
// then the rest. Killing a namespace's init first would let its bwrap exit on its own with a
// status, so a waiting caller would see an exit code where it expects SIGKILL.
import { readFileSync } from 'node:fs';
import { mkdir, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { basename, join } from 'node:path';
import type { Logger } from 'pino';
import { readProc, SANDBOX_COMMAND, type ProcInfo } from './proc-proof.ts';

const OWNERS_DIR = '.owners';
const BRIDGE_COMMAND = 'socat';
/** The runtime's bridge sockets (`initializeLinuxNetworkBridge`): the only files a sweep removes. */
const BRIDGE_SOCKET = /^claude-(?:http|socks)-[0-9a-f]+\.sock$/;

interface Recorded {
  readonly pid: number;
  readonly startTime: string;
}

interface OwnerRecord extends Recorded {
  readonly bridges: readonly (Recorded & { readonly socket: string })[];
}

export interface SandboxProc {
  readonly pid: number;
  readonly info: ProcInfo;
}

/**
 * Records this process as an owner of `rootDir`, with the runtime's bridges (its socat children
 * listening on `sockets`). Returns the function that removes the record (at a clean close).
 */
export async function recordOwner(
  rootDir: string,
  sockets: readonly string[],
): Promise<() => Promise<void>> {
  const self = await readProc(process.pid);
  const bridges: (Recorded & { socket: string })[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const info = await readProc(Number(entry));
    if (info?.ppid !== process.pid || basename(info.argv[0] ?? '') !== BRIDGE_COMMAND) continue;
    const socket = sockets.find((s) => info.argv[1]?.startsWith(`UNIX-LISTEN:${s},`));
    if (socket !== undefined)
      bridges.push({ pid: Number(entry), startTime: info.startTime, socket });
  }
  const record: OwnerRecord = { pid: process.pid, startTime: self?.startTime ?? '', bridges };
  const dir = join(rootDir, OWNERS_DIR);
  await mkdir(dir, { recursive: true, mode: 0o700 });
  const file = join(dir, `${process.pid}.json`);
  await writeFile(file, JSON.stringify(record), { mode: 0o600 });
  return () => rm(file, { force: true });
}

/**
 * Ends what dead owners of `rootDir` left running: their recorded bridges, and every sandbox
 * process of the root whose parent is not a live owner. Returns how many processes were killed.
 */
export async function sweepOrphans(rootDir: string, logger?: Logger): Promise<number> {
  const dir = join(rootDir, OWNERS_DIR);
  const live = new Set<number>([process.pid]);
  let killed = 0;
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!/^\d+\.json$/.test(name)) continue;
    const file = join(dir, name);
    const record = await readFile(file, 'utf8')
      .then((text) => JSON.parse(text) as OwnerRecord)
      .catch(() => undefined);
    if (record === undefined) continue;
    if ((await readProc(record.pid))?.startTime === record.startTime) {
      live.add(record.pid);
      continue;
    }
    for (const bridge of record.bridges) {
      const info = await readProc(bridge.pid);
      if (
        info?.startTime === bridge.startTime &&
        basename(info.argv[0] ?? '') === BRIDGE_COMMAND &&
        signal(bridge.pid)
      ) {
        killed++;
      }
      if (BRIDGE_SOCKET.test(basename(bridge.socket))) {
        await rm(bridge.socket, { force: true });
      }
    }
    await rm(file, { force: true });
    logger?.info({ owner: record.pid, bridges: record.bridges.length }, 'swept a dead owner');
  }
  const found = await sandboxProcesses(`${rootDir}/lsb_`);
  const byPid = new Map(found.map((p) => [p.pid, p]));
  // A tree belongs to whoever started its outermost process (a namespace's bwrap is the child
  // of the host-side one): an orphan is a process of a tree whose top has no live owner.
  const topOf = (p: SandboxProc): SandboxProc => {
    const seen = new Set<number>();
    while (byPid.has(p.info.ppid) && !seen.has(p.pid)) {
      seen.add(p.pid);
      p = byPid.get(p.info.ppid)!;
    }
    return p;
  };
  const orphans = found.filter((p) => !live.has(topOf(p).info.ppid));
  killed += killOutermostFirst(orphans);
  if (orphans.length > 0) {
    logger?.warn({ pids: orphans.map((p) => p.pid) }, 'killed sandbox processes of a dead owner');
  }
  return killed;
}

/**
 * Live bwrap processes whose command line contains `text`, and the launchers about to become
 * one (`[sh -c <join cgroup> ...] [setpriv ...] bash --norc --noprofile -c 'bwrap ...'`, before
 * their execs): a command started a moment ago must not slip through between the two.
 */
export async function sandboxProcesses(text: string): Promise<SandboxProc[]> {
  const found: SandboxProc[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    // Without cgroups the reaper scans /proc once per sandbox it destroys, hundreds in a pass,
    // over every process of the host: the command line alone rules a process out, read
    // synchronously (procfs answers from memory, a few microseconds, where two thread-pool
    // reads per process made a 300-sandbox pass outlast the stop timeout). Only a process
    // whose command line holds `text` is read whole.
    let cmdline: string;
    try {
      cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8');
    } catch {
      continue; // Gone in between.
    }
    if (!cmdline.includes(text)) continue;
    const info = await readProc(Number(entry));
    if (info === undefined) continue;
    const { argv } = info;
    const cmd = argv[0] ?? '';
    if (cmd === SANDBOX_COMMAND || cmd.endsWith(`/${SANDBOX_COMMAND}`)) {
      if (argv.some((a) => a.includes(text))) found.push({ pid: Number(entry), info });
    } else if (cmd === '/bin/bash' || cmd === '/bin/sh' || cmd === '/usr/bin/setpriv') {
      const line = argv[argv.lastIndexOf('-c') + 1] ?? '';
      if (line.startsWith(`${SANDBOX_COMMAND} `) && line.includes(text)) {
        found.push({ pid: Number(entry), info });
      }
    }
  }
  return found;
}

/**
 * SIGKILLs each process, the outermost of each tree first (with its group when it leads one),
 * all in one synchronous run: no await lets a leader reap its killed child and exit with a
 * status before its own signal. Returns how many signals were delivered.
 */
export function killOutermostFirst(procs: readonly SandboxProc[]): number {
  const pids = new Set(procs.map((p) => p.pid));
  const outer = procs.filter((p) => !pids.has(p.info.ppid));
  const inner = procs.filter((p) => pids.has(p.info.ppid));
  let sent = 0;
  for (const p of [...outer, ...inner]) {
    if (signal(p.info.pgrp === p.pid ? -p.pid : p.pid)) sent++;
  }
  return sent;
}

function signal(target: number): boolean {
  try {
    process.kill(target, 'SIGKILL');
    return true;
  } catch {
    return false; // Gone in between.
  }
}
