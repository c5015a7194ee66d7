// Where a `pnpm stack` keeps its servers and files: the checkout's .data (or STACK_DATA_DIR),
// locked by a stack.pid while it runs, or a folder of its own beside another running stack; and
// the folders Postgres and the sandboxes need when the checkout is private to root.
import { spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { unlinkSync } from 'node:fs';
import { mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { dirname, join, resolve } from 'node:path';
import { loadConfig } from '@toolmesh/config';

export const ROOT = join(import.meta.dirname, '..');
const DEFAULT_DATA = join(ROOT, '.data');
/** The keys (admin, secrets) and the first stack's servers and files. */
export const DATA = process.env['STACK_DATA_DIR']
  ? resolve(process.env['STACK_DATA_DIR'])
  : DEFAULT_DATA;

const say = (line: string) => console.log(`[stack] ${line}`);

/** Stack lock files this process holds; removed however it exits. */
const locks: string[] = [];
process.on('exit', () => {
  for (const file of locks) {
    try {
      unlinkSync(file);
    } catch {
      // already gone
    }
  }
});

/** Whether a process with this pid runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Takes `dir` for this stack: a stack.pid file with this process's pid, made exclusively. False
 * while a live stack holds it; the file of a stack that died without removing it is replaced.
 */
async function lockDir(dir: string): Promise<boolean> {
  await mkdir(dir, { recursive: true });
  const file = join(dir, 'stack.pid');
  for (let attempt = 0; attempt < 3; attempt++) {
    try {
      await writeFile(file, `${process.pid}\n`, { flag: 'wx' });
      locks.push(file);
      return true;
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
      const pid = Number((await readFile(file, 'utf8').catch(() => '')).trim());
      if (Number.isInteger(pid) && pid > 0 && alive(pid)) return false;
      await rm(file, { force: true });
    }
  }
  return false;
}

/**
 * The folder of this stack's servers and files: DATA, or, while another stack holds that, one of
 * its own named after the api's port, which is what tells two stacks on one machine apart.
 */
export async function stateDir(apiPort: string): Promise<string> {
  if (await lockDir(DATA)) return DATA;
  const beside = join(DATA, 'stacks', `api-${apiPort}`);
  if (await lockDir(beside)) {
    say(`another stack holds ${DATA}: this one keeps its servers and files in ${beside}`);
    return beside;
  }
  say(`another stack holds ${DATA} and ${beside}; stop one of them first`);
  process.exit(2);
}

/**
 * Where the local Postgres keeps its data: .data/postgres, unless the stack runs as root in a
 * checkout the `postgres` OS user cannot enter (a clone in /root, which is 0700 on Debian). The
 * server refuses to run as root, so its data then goes under /var/lib/toolmesh, one folder per
 * checkout.
 */
export function postgresDir(state: string): string {
  const preferred = join(state, 'postgres');
  if (process.getuid?.() !== 0) return preferred;
  const probe = spawnSync('runuser', ['-u', 'postgres', '--', 'test', '-x', state]);
  if (probe.status === 0) return preferred;
  const dir = join('/var/lib/toolmesh', `postgres-${stateId(state)}`);
  say(`the postgres OS user cannot enter ${state} (a parent folder is private): data in ${dir}`);
  return dir;
}

/** Names a folder outside the checkout after this stack's: the checkout's .data keeps its name. */
function stateId(state: string): string {
  const of = state === DEFAULT_DATA ? ROOT : state;
  return createHash('sha256').update(of).digest('hex').slice(0, 12);
}

/**
 * Where sandboxes live: in a stack folder other than the checkout's .data, there. As root their
 * commands run as `sandbox.uid`, which must enter the folder; a checkout in /root (0700) cannot
 * hold it, so it then goes under /var/lib/toolmesh, one folder per stack folder, as Postgres's
 * data does. Undefined: the configured `sandbox.root_dir` (set by the operator, or
 * `.data/sandboxes`) is fine.
 */
export function sandboxRootDir(state: string): string | undefined {
  if (process.env['CG__SANDBOX__ROOT_DIR']) return undefined;
  const { uid, gid, root_dir } = loadConfig({ env: process.env }).sandbox;
  // A stack of its own beside another keeps its sandboxes apart too: each reaper removes the
  // environments its database does not know.
  const own = state === DEFAULT_DATA ? undefined : join(state, 'sandboxes');
  if (process.getuid?.() !== 0) return own;
  const preferred = own ?? resolve(ROOT, root_dir);
  const probe = spawnSync('/usr/bin/test', ['-x', dirname(preferred)], { uid, gid });
  if (probe.status === 0) return own;
  const dir = join('/var/lib/toolmesh', `sandboxes-${stateId(state)}`);
  say(`sandboxed commands (uid ${uid}) cannot enter ${dirname(preferred)}: sandboxes in ${dir}`);
  return dir;
}
