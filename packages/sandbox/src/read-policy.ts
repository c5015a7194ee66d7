// What a sandboxed command may read: an allow-list, not a deny-list.
//
// Every top-level folder of the host is hidden (sandbox-runtime's `denyRead: ['/']` becomes a
// tmpfs over each child of `/`), and these come back read-only: the system folders a program
// needs, a minimal `/etc`, the session's workdir (writable) and the runtime's own helpers.
// Hidden therefore: the service's checkout and its `.data/` (admin key, artifacts), every other
// sandbox, the host's `/tmp` (each command gets an empty tmpfs there), `/root`, `/home`,
// `/var`, `/opt`, `/srv`, `/mnt`, `/run`. `/proc` is the command's own pid namespace, `/dev` a
// minimal one; `/sys` stays (the runtime keeps the kernel interface, read-only).
//
// `/etc` is rebuilt from the names below: no `shadow`, `gshadow`, `sudoers`, `ssh` host keys,
// `ssl/private`, nor anything a deployment drops there (a service's config, database
// passwords), nor files that often carry registry or proxy credentials (`pip.conf`, `npmrc`,
// `gitconfig`, `wgetrc`). A name that does not exist on the host is skipped.
import { existsSync } from 'node:fs';

/** Folders of programs and their libraries. `/bin`, `/lib` may be links into `/usr`. */
export const SYSTEM_READ_PATHS: readonly string[] = [
  '/usr',
  '/bin',
  '/sbin',
  '/lib',
  '/lib32',
  '/lib64',
  '/libx32',
];

/** What programs commonly read from `/etc`: users and groups by name, name resolution,
 * the dynamic loader, time zone, locale, TLS roots, MIME types, language runtimes' defaults. */
export const ETC_READ_PATHS: readonly string[] = [
  'passwd',
  'group',
  'hosts',
  'hostname',
  'host.conf',
  'resolv.conf',
  'nsswitch.conf',
  'gai.conf',
  'networks',
  'protocols',
  'services',
  'ld.so.cache',
  'ld.so.conf',
  'ld.so.conf.d',
  'localtime',
  'timezone',
  'locale.alias',
  'alternatives',
  'ssl/certs',
  'ssl/openssl.cnf',
  'pki/tls/certs',
  'pki/ca-trust/extracted',
  'crypto-policies/back-ends',
  'ca-certificates',
  'ca-certificates.conf',
  'mime.types',
  'magic',
  'magic.mime',
  'mailcap',
  'debian_version',
  'os-release',
  'shells',
  'inputrc',
  'bash.bashrc',
  'profile',
  'terminfo',
  'fonts',
  'xdg',
  'python3',
  'python3.11',
  'python3.12',
  'python3.13',
  'java-17-openjdk',
  'java-21-openjdk',
  'perl',
  'vim',
].map((name) => `/etc/${name}`);

let memo: readonly string[] | undefined;

/** The system allow-list as it exists on this host (computed once). */
export function systemReadPaths(): readonly string[] {
  memo ??= [...SYSTEM_READ_PATHS, ...ETC_READ_PATHS].filter((path) => existsSync(path));
  return memo;
}
