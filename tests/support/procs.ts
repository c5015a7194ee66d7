// Looking for processes on this host, and waiting for conditions: what the sandbox tests use to
// prove that nothing of a killed command is left.
import { readdir, readFile } from 'node:fs/promises';

/** Pids of processes whose command line contains `marker`. */
export async function processesWith(marker: string): Promise<number[]> {
  const found: number[] = [];
  for (const pid of await readdir('/proc')) {
    if (!/^\d+$/.test(pid)) continue;
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.includes(marker)) found.push(Number(pid));
  }
  return found;
}

/** Polls `fn` until it returns something other than undefined. */
export async function until<T>(fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 100));
  }
}
