// Where a sandboxed command's network lives: each command gets a network namespace of its own,
// entered by a process bwrap forks. The host side (a port forwarder) reaches it through
// /proc/<pid>/ns/net, which needs the pid of any process inside that namespace.
import { readdir, readFile, readlink } from 'node:fs/promises';

async function ppidOf(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // The command name (field 2) is in parentheses and may itself hold ')' or spaces.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ppid = Number(fields[1]);
    return Number.isInteger(ppid) ? ppid : undefined;
  } catch {
    return undefined;
  }
}

const netnsOf = (pid: number) => readlink(`/proc/${pid}/ns/net`).catch(() => undefined);

/**
 * The pid of a descendant of `rootPid` (the sandbox's bwrap) that lives in another network
 * namespace than `rootPid` itself, nearest first; undefined when there is none (yet), or the
 * root is gone.
 */
export async function netnsPidOf(rootPid: number): Promise<number | undefined> {
  const rootNs = await netnsOf(rootPid);
  if (rootNs === undefined) return undefined;
  const children = new Map<number, number[]>();
  for (const name of await readdir('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    const pid = Number(name);
    const ppid = await ppidOf(pid);
    if (ppid === undefined) continue;
    const list = children.get(ppid);
    if (list) list.push(pid);
    else children.set(ppid, [pid]);
  }
  // Breadth first: the namespace's first process is the shallowest one in it.
  const queue = [...(children.get(rootPid) ?? [])];
  const seen = new Set<number>([rootPid]);
  while (queue.length > 0) {
    const pid = queue.shift()!;
    if (seen.has(pid)) continue;
    seen.add(pid);
    const ns = await netnsOf(pid);
    if (ns !== undefined && ns !== rootNs) return pid;
    queue.push(...(children.get(pid) ?? []));
  }
  return undefined;
}
