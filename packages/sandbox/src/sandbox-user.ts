// Who a sandboxed command is on the host.
//
// bubblewrap gives a command a user namespace, but when the service runs as root that namespace
// maps uid 0 to the host's uid 0: the command owns every root-owned file the mount table lets
// it see (`/etc/shadow` is 0640 root). So a root service drops to an unprivileged user on the
// host side, between joining the command's cgroups (which takes root) and starting bwrap,
// which then runs unprivileged (unprivileged user namespaces must be enabled, as they are on
// Debian, Ubuntu and Fedora by default). The command is that uid on the host and inside.
//
// That user owns the workdir (files the host puts there are chowned to it), so commands can
// write their own files; the service, as root, still reads and removes everything. It must be
// able to enter the sandboxes' folder: a `root_dir` under a private folder (a clone in /root,
// which is 0700) is refused at start with a sentence saying so.
//
// A service that is not root has nothing to drop: its commands run as its own uid.
import { spawnSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { SandboxError } from './errors.ts';

export interface SandboxUser {
  readonly uid: number;
  readonly gid: number;
}

/** `nobody`/`nogroup` on Debian: owns no file, belongs to no group that does. */
export const DEFAULT_SANDBOX_USER: SandboxUser = { uid: 65534, gid: 65534 };

const SETPRIV = '/usr/bin/setpriv';

/**
 * The user commands run as: `configured` when this process is root, else none (commands run as
 * this process's own uid, already unprivileged).
 */
export function sandboxUserFor(configured: SandboxUser | undefined): SandboxUser | undefined {
  if (process.getuid?.() !== 0) return undefined;
  const user = configured ?? DEFAULT_SANDBOX_USER;
  if (user.uid === 0) return undefined;
  return user;
}

/**
 * Refuses to start where commands could not run as the sandbox user: no `setpriv`, no
 * unprivileged user namespaces (bubblewrap then runs unprivileged), or a sandboxes' folder the
 * user cannot enter (bwrap binds the workdir with its rights). Said once, at start, rather than
 * by every command failing.
 */
export function assertReachable(user: SandboxUser, dir: string): void {
  if (!existsSync(SETPRIV)) {
    throw new SandboxError(
      'unavailable',
      `${SETPRIV} is missing (util-linux): it drops sandboxed commands to uid ${user.uid}`,
    );
  }
  const userns = spawnSync(
    SETPRIV,
    [
      `--reuid=${user.uid}`,
      `--regid=${user.gid}`,
      '--clear-groups',
      '--',
      'bwrap',
      '--unshare-user',
      '--ro-bind',
      '/',
      '/',
      '--',
      '/bin/true',
    ],
    { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' },
  );
  if (userns.status !== 0) {
    throw new SandboxError(
      'unavailable',
      `bubblewrap cannot make a user namespace as uid ${user.uid} (${userns.stderr.trim() || `exit ${userns.status}`}): ` +
        `enable unprivileged user namespaces (Ubuntu 24.04: sysctl kernel.apparmor_restrict_unprivileged_userns=0)`,
    );
  }
  const probe = spawnSync('/usr/bin/test', ['-x', dir], {
    uid: user.uid,
    gid: user.gid,
    stdio: 'ignore',
  });
  if (probe.status !== 0) {
    throw new SandboxError(
      'unavailable',
      `sandbox commands run as uid ${user.uid}, which cannot enter ${dir} (a parent folder is ` +
        `private, e.g. /root is 0700): set sandbox.root_dir to a folder it can reach, such as ` +
        `/var/lib/toolmesh/sandboxes`,
    );
  }
}

// Moves the launcher into the command's cgroups before bwrap exists, so no child starts
// outside them: `sh -c JOIN toolmesh-join <n> <procs files...> <command...>`.
const JOIN =
  'n=$1; shift; while [ "$n" -gt 0 ]; do echo $$ > "$1" || exit 125; n=$((n - 1)); shift; done; exec "$@"';

/**
 * The host-side argv that runs a wrapped bwrap line: joins the cgroups (as this process), drops
 * to the sandbox user when there is one, and runs the line with a bash that reads no rc files.
 */
export function hostArgv(
  line: string,
  options: { readonly cgroupProcs: readonly string[]; readonly user: SandboxUser | undefined },
): [string, ...string[]] {
  const bash = ['/bin/bash', '--norc', '--noprofile', '-c', line];
  const run =
    options.user === undefined
      ? bash
      : [
          SETPRIV,
          `--reuid=${options.user.uid}`,
          `--regid=${options.user.gid}`,
          '--clear-groups',
          '--',
          ...bash,
        ];
  if (options.cgroupProcs.length === 0) return run as [string, ...string[]];
  return [
    '/bin/sh',
    '-c',
    JOIN,
    'toolmesh-join',
    String(options.cgroupProcs.length),
    ...options.cgroupProcs,
    ...run,
  ];
}
