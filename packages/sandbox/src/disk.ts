// Disk of one local sandbox: its workdir may hold at most `diskBytes` (sandbox.disk_bytes).
//
// Why accounting and not a filesystem limit: a size-limited tmpfs (bwrap --size) lives only as
// long as the bwrap that mounted it, and a session's files outlive every command; a loop-mounted
// image or a project quota takes root (and loop devices or a quota-enabled filesystem), while the
// service also runs unprivileged. So, with what works for any user:
// - before a command, the workdir's usage is measured (`du`: allocated bytes, hard links once,
//   symlinks not followed, one filesystem) and the command's RLIMIT_FSIZE is lowered to what is
//   left (at most file_size_bytes): a write that would take one file past the budget fails
//   (EFBIG, SIGXFSZ). A full sandbox runs its commands with RLIMIT_FSIZE 0: they can still
//   delete, but not write;
// - while it runs, the usage is measured again every DISK_CHECK_MS (less often when `du` is slow
//   on a large tree): past the limit (several files, each under the rlimit) the command is
//   killed;
// - after it ends, once more: a command that grew the workdir to the limit or past it (full: its
//   write was cut there, even if it went on without it), or died of SIGXFSZ under a disk-bound
//   rlimit, reports `limitExceeded: 'disk'` (code `disk_full`).
// `putFile` refuses a file that would take the workdir past the limit. The overshoot is
// bounded by what a command writes in one check interval. The private /tmp is a tmpfs of at
// most the same size (bwrap --size), gone with the command (or its warm executor).
import { execFile } from 'node:child_process';

/** How often a running command's workdir is measured. */
export const DISK_CHECK_MS = 500;
/** Exit status of a command killed by SIGXFSZ, as the sandbox's layers pass it on. */
export const SIGXFSZ_STATUS = 128 + 25;

/** Bytes the folder takes on disk (allocated blocks), as `du -sxB1` counts them. */
export function diskUsage(dir: string): Promise<number> {
  return new Promise((resolve, reject) => {
    execFile(
      '/usr/bin/du',
      ['-s', '-x', '-B1', '--', dir],
      { maxBuffer: 1024 * 1024 },
      // A file removed while du walks is an error for du, not for us: its total still stands.
      (err, stdout) => {
        const bytes = Number(/^(\d+)\s/.exec(stdout)?.[1]);
        if (Number.isFinite(bytes)) resolve(bytes);
        else reject(err ?? new Error(`du gave no total for ${dir}`));
      },
    );
  });
}

export interface DiskWatch {
  /** Aborted once the workdir went past the limit (the command is then killed). */
  readonly signal: AbortSignal;
  /** True once a measure found the workdir past the limit. */
  readonly over: boolean;
  /** Stops watching and measures once more; true when the workdir ended at or past the limit. */
  finish(): Promise<boolean>;
}

/**
 * Watches `dir` while a command runs; `signal` aborts when it grows past `limitBytes`.
 * `usedBytes` is what it held before: a command that wrote nothing (`ls` in a full sandbox) is
 * not reported.
 */
export function watchDisk(dir: string, limitBytes: number, usedBytes: number): DiskWatch {
  const controller = new AbortController();
  let over = false;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  let running: Promise<void> = Promise.resolve();
  const measure = async (): Promise<void> => {
    const started = performance.now();
    const used = await diskUsage(dir).catch(() => 0);
    if (used > limitBytes && !over) {
      over = true;
      controller.abort();
    }
    if (stopped || over) return;
    // A tree so large that du takes long is measured less often: the check must not cost more
    // than a tenth of a core.
    const took = performance.now() - started;
    timer = setTimeout(tick, Math.max(DISK_CHECK_MS, took * 10));
    timer.unref();
  };
  const tick = (): void => {
    running = measure();
  };
  timer = setTimeout(tick, DISK_CHECK_MS);
  timer.unref();
  return {
    signal: controller.signal,
    get over() {
      return over;
    },
    async finish() {
      stopped = true;
      clearTimeout(timer);
      await running;
      // At the limit is full: a write was cut there (RLIMIT_FSIZE is what was left), even when
      // the command went on without it.
      const used = over ? 0 : await diskUsage(dir).catch(() => 0);
      if (used >= limitBytes && used > usedBytes) over = true;
      return over;
    },
  };
}
