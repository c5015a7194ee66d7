// The floor for `pnpm bench sandbox`: one bare bubblewrap spawn of /bin/true with the isolation
// flags a sandboxed command gets at the least (read-only root, private /tmp, /dev and /proc, new
// pid, network and user namespaces, killed with its parent, new session), and none of the
// sandbox-runtime layers on top (proxy bridges, seccomp helper, deny scans, launcher).
import { spawn } from 'node:child_process';

export const BARE_BWRAP_TRUE_ARGV: readonly string[] = [
  'bwrap',
  '--ro-bind',
  '/',
  '/',
  '--tmpfs',
  '/tmp',
  '--dev',
  '/dev',
  '--proc',
  '/proc',
  '--unshare-user',
  '--unshare-pid',
  '--unshare-net',
  '--die-with-parent',
  '--new-session',
  '--',
  '/bin/true',
];

/** Runs the floor once; resolves with its wall-clock time, rejects if it did not exit 0. */
export function bareBwrapTrue(): Promise<{ durationMs: number }> {
  const [file, ...args] = BARE_BWRAP_TRUE_ARGV;
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const child = spawn(file!, args, { stdio: 'ignore', env: { PATH: '/usr/bin:/bin' } });
    child.once('error', reject);
    child.once('exit', (code, signal) => {
      if (code === 0) resolve({ durationMs: performance.now() - started });
      else reject(new Error(`bare bwrap /bin/true failed: exit ${code} signal ${signal}`));
    });
  });
}
