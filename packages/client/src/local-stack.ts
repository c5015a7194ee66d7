// Finding a running `pnpm stack` on this machine, so the CLI, the SDK and `toolmesh mcp serve`
// work with no flags and no environment. A stack writes stack.json (its api, NATS URL, subject
// root, admin key, and a project with an API key and a bus credential for local use) into its
// folder and holds stack.pid there while it runs; a second stack beside it keeps its own folder
// under .data/stacks/api-<port>. A stack.json whose stack.pid names no live process is a stack
// that stopped: it is passed over.
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join, parse, resolve } from 'node:path';

/** What `pnpm stack` writes into stack.json. */
export interface LocalStack {
  /** The stack's folder (holds stack.json and stack.pid). */
  dir: string;
  apiUrl: string;
  natsUrl: string;
  root: string;
  adminKey: string;
  /** The project made for local use, with an API key (role admin) and a bus credential. */
  project?: string | undefined;
  apiKey?: string | undefined;
  /** Path of the project's bus credential (.creds). */
  busCreds?: string | undefined;
  consoleUrl?: string | undefined;
}

export interface FindLocalStackOptions {
  /** Where to start looking upward for a checkout's .data (default: the process's cwd). */
  cwd?: string;
  env?: Readonly<Record<string, string | undefined>>;
  /**
   * More checkouts to look in after the cwd's: the CLI passes its own, so `toolmesh` run from
   * any folder finds the stack of the checkout it belongs to.
   */
  checkouts?: readonly string[];
}

/** Whether a process with this pid runs (EPERM: it does, as another user). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

function readStack(dir: string): LocalStack | undefined {
  let pid: number;
  let doc: Record<string, unknown>;
  try {
    pid = Number(readFileSync(join(dir, 'stack.pid'), 'utf8').trim());
    doc = JSON.parse(readFileSync(join(dir, 'stack.json'), 'utf8')) as Record<string, unknown>;
  } catch {
    return undefined;
  }
  if (!Number.isInteger(pid) || pid <= 0 || !alive(pid)) return undefined;
  const str = (k: string) => (typeof doc[k] === 'string' ? doc[k] : undefined);
  const apiUrl = str('apiUrl');
  const natsUrl = str('natsUrl');
  if (apiUrl === undefined || natsUrl === undefined) return undefined;
  return {
    dir,
    apiUrl,
    natsUrl,
    root: str('root') ?? 'cg',
    adminKey: str('adminKey') ?? '',
    project: str('project'),
    apiKey: str('apiKey'),
    busCreds: str('busCreds'),
    consoleUrl: str('consoleUrl'),
  };
}

/** A data folder's own stack, then the stacks beside it (.data/stacks/*), in name order. */
function stacksIn(data: string): string[] {
  let beside: string[] = [];
  try {
    beside = readdirSync(join(data, 'stacks'))
      .sort()
      .map((d) => join(data, 'stacks', d));
  } catch {
    // no second stack ever ran here
  }
  return [data, ...beside];
}

/** The checkouts above `from` (nearest first) that hold a .data folder. */
function checkoutsAbove(from: string): string[] {
  const found: string[] = [];
  let dir = resolve(from);
  const top = parse(dir).root;
  for (;;) {
    if (existsSync(join(dir, '.data'))) found.push(dir);
    if (dir === top) return found;
    dir = dirname(dir);
  }
}

/**
 * The running local stack: the one in STACK_DATA_DIR when that is set, else the first running
 * one of the checkouts above the cwd, else of `checkouts`. Undefined when none runs.
 */
export function findLocalStack(opts: FindLocalStackOptions = {}): LocalStack | undefined {
  const env = opts.env ?? process.env;
  const datas: string[] = [];
  const pinned = env['STACK_DATA_DIR'];
  if (pinned) datas.push(resolve(pinned));
  else {
    for (const c of checkoutsAbove(opts.cwd ?? process.cwd())) datas.push(join(c, '.data'));
    for (const c of opts.checkouts ?? []) datas.push(join(resolve(c), '.data'));
  }
  const seen = new Set<string>();
  for (const data of datas) {
    for (const dir of stacksIn(data)) {
      if (seen.has(dir)) continue;
      seen.add(dir);
      const stack = readStack(dir);
      if (stack) return stack;
    }
  }
  return undefined;
}

/** The one line that says which stack a command uses. */
export function describeStack(s: LocalStack): string {
  const project = s.project ? `, project ${s.project}` : '';
  return `using the local stack in ${s.dir} (api ${s.apiUrl}, NATS ${s.natsUrl}${project})`;
}
