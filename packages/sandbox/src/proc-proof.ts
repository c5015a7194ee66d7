// Proof that a pid is a sandbox's process: pids are reused, so a pid read from a task head or a
// scan counts as ours only when it is alive, started at the recorded time (field 22 of
// /proc/<pid>/stat, unique per pid over time) and runs the expected command (bwrap: the
// launcher's sh and bash exec into it). Shared by the skills service's task reaper and the
// sandbox-reaper daemon, which both kill only what this proves.
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';

/** The sandbox's host-side process (the launcher's sh and bash exec into it). */
export const SANDBOX_COMMAND = 'bwrap';

export interface ProcInfo {
  /** Field 22 of /proc/<pid>/stat: clock ticks since boot, unique per pid over time. */
  readonly startTime: string;
  /** Field 4: the parent. */
  readonly ppid: number;
  /** Field 5: the process group. */
  readonly pgrp: number;
  readonly state: string;
  readonly argv: string[];
}

/** What /proc says of a pid; undefined when there is no such process (or it is a zombie). */
export async function readProc(pid: number): Promise<ProcInfo | undefined> {
  try {
    const [stat, cmdline] = await Promise.all([
      readFile(`/proc/${pid}/stat`, 'utf8'),
      readFile(`/proc/${pid}/cmdline`, 'utf8'),
    ]);
    // The command name (field 2) is in parentheses and may itself hold ')' or spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const state = fields[0] ?? '';
    if (state === 'Z' || state === 'X') return undefined;
    return {
      startTime: fields[19] ?? '',
      ppid: Number(fields[1]),
      pgrp: Number(fields[2]),
      state,
      argv: cmdline.split('\0').filter((a, i, all) => i < all.length - 1 || a !== ''),
    };
  } catch {
    return undefined;
  }
}

/**
 * True only when `pid` is alive, started at `startTime` and runs `command` (bwrap by default):
 * the proof required before a process counts as a task's, alive or to be killed.
 */
export async function isOurProcess(
  pid: number | null,
  startTime: string | null,
  command = SANDBOX_COMMAND,
): Promise<boolean> {
  if (pid === null || pid <= 1 || !startTime) return false;
  const info = await readProc(pid);
  return (
    info !== undefined &&
    info.startTime === startTime &&
    info.argv[0] !== undefined &&
    basename(info.argv[0]) === command
  );
}
