// Looking for processes on this host, and waiting for conditions: what the sandbox tests use to
// prove that nothing of a killed command is left, and to start a service as a child process.
import { spawn, type ChildProcess } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { sandboxRootEnv } from '@toolmesh/testing';

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

/**
 * Starts `node <main>` with exactly `env` (plus PATH) and resolves once its stdout carried the
 * `ready` line; the error names the process and holds the end of its output. `prefix` runs node
 * through a wrapper that execs it (e.g. setpriv to another user).
 */
export async function spawnReady(
  main: string,
  env: Record<string, string>,
  ready: string,
  name: string,
  prefix: readonly string[] = [],
): Promise<ChildProcess> {
  const argv = [...prefix, process.execPath, main];
  const child = spawn(argv[0]!, argv.slice(1), {
    // The run's sandbox folder, as the test api and meshes give every service they start: a
    // skills service refuses one the sandbox user cannot enter (a checkout under /root).
    env: { PATH: process.env['PATH'] ?? '', ...sandboxRootEnv(), ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stderr.on('data', (b: Buffer) => (out = (out + b.toString()).slice(-16_384)));
  await new Promise<void>((resolve, reject) => {
    const onData = (b: Buffer) => {
      out = (out + b.toString()).slice(-16_384);
      if (out.includes(ready)) {
        child.stdout.off('data', onData);
        resolve();
      }
    };
    child.stdout.on('data', onData);
    child.once('exit', (code) => reject(new Error(`${name} exited (${code}):\n${out}`)));
  });
  child.stdout.resume();
  return child;
}
