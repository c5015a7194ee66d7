// Helpers for the local servers' child processes: running a command to completion, keeping the
// tail of a server's output for error messages, finding binaries, running as the `postgres` OS
// user when we are root, and stopping servers when this process exits.
import { spawn } from 'node:child_process';
import { constants } from 'node:fs';
import { access } from 'node:fs/promises';
import { delimiter, join } from 'node:path';

/** The last lines of a server's output, so a failure can say what the server said. */
export class LogTail {
  readonly #lines: string[] = [];
  readonly #max: number;
  #partial = '';

  constructor(max = 40) {
    this.#max = max;
  }

  push(chunk: Buffer | string): void {
    const parts = (this.#partial + chunk.toString()).split('\n');
    this.#partial = parts.pop() ?? '';
    this.#lines.push(...parts);
    if (this.#lines.length > this.#max) this.#lines.splice(0, this.#lines.length - this.#max);
  }

  text(): string {
    return [...this.#lines, this.#partial].join('\n').trim();
  }
}

export interface RunOptions {
  cwd?: string;
  timeoutMs?: number;
}

/** Runs a command to completion; rejects with its output when it fails or takes too long. */
export function run(
  command: string,
  args: readonly string[],
  options: RunOptions = {},
): Promise<string> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(command, args, { cwd: options.cwd, stdio: ['ignore', 'pipe', 'pipe'] });
    const output = new LogTail(80);
    child.stdout.on('data', (c: Buffer) => output.push(c));
    child.stderr.on('data', (c: Buffer) => output.push(c));
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(
        new Error(`${describe(command, args)} took longer than ${timeoutMs} ms:\n${output.text()}`),
      );
    }, timeoutMs);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${describe(command, args)} could not run: ${err.message}`, { cause: err }));
    });
    // 'exit', not 'close': pg_ctl leaves a daemon behind that may inherit our pipes.
    child.on('exit', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve(output.text());
      else {
        const how = signal === null ? `exited with code ${code}` : `was killed by ${signal}`;
        reject(new Error(`${describe(command, args)} ${how}:\n${output.text()}`));
      }
    });
  });
}

function describe(command: string, args: readonly string[]): string {
  return [command, ...args].join(' ');
}

/** Finds an executable on PATH or in the given folders (sbin is often not on a user's PATH). */
export async function findExecutable(
  name: string,
  extraDirs: readonly string[] = [],
): Promise<string | undefined> {
  const dirs = [...(process.env['PATH'] ?? '').split(delimiter), ...extraDirs].filter(
    (d) => d !== '',
  );
  for (const dir of dirs) {
    const candidate = join(dir, name);
    try {
      await access(candidate, constants.X_OK);
      return candidate;
    } catch {
      // Not in this folder; try the next one.
    }
  }
  return undefined;
}

export function isRoot(): boolean {
  return process.getuid?.() === 0;
}

/** initdb and postgres refuse to run as root, so as root we run them as the `postgres` user. */
export function asPostgresUser(command: string, args: readonly string[]): [string, string[]] {
  return isRoot() ? ['runuser', ['-u', 'postgres', '--', command, ...args]] : [command, [...args]];
}

/** Polls `check` until it returns true; rejects with `what` and the detail from `explain`. */
export async function waitUntil(
  check: () => Promise<boolean>,
  options: { timeoutMs: number; intervalMs?: number; what: string; explain?: () => string },
): Promise<void> {
  const deadline = Date.now() + options.timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, options.intervalMs ?? 50));
  }
  const detail = options.explain?.() ?? '';
  throw new Error(
    `${options.what} within ${options.timeoutMs} ms${detail === '' ? '' : `:\n${detail}`}`,
  );
}

type Cleanup = () => void;
const CLEANUPS = Symbol.for('toolmesh.testing.exitCleanups');
const SIGNALS = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/**
 * Registers a synchronous cleanup (kill a server, remove its folder) that runs when this
 * process exits; returns a function that unregisters it. Keyed on globalThis because a test
 * runner may load this module several times into one process.
 */
export function onExit(cleanup: Cleanup): () => void {
  const store = globalThis as { [CLEANUPS]?: Set<Cleanup> };
  let cleanups = store[CLEANUPS];
  if (cleanups === undefined) {
    const all = new Set<Cleanup>();
    cleanups = all;
    store[CLEANUPS] = all;
    const runAll = (): void => {
      for (const c of [...all]) {
        all.delete(c);
        try {
          c();
        } catch {
          // The process is going away; a failed cleanup must not stop the others.
        }
      }
    };
    process.on('exit', runAll);
    for (const signal of SIGNALS) {
      const onSignal = (): void => {
        // When the program handles the signal itself it shuts down in its own order (its
        // services may still need these servers) and the 'exit' hook cleans up afterwards.
        if (process.listenerCount(signal) > 1) return;
        runAll();
        process.removeListener(signal, onSignal);
        process.kill(process.pid, signal); // die of the signal as if we had never listened
      };
      process.on(signal, onSignal);
    }
  }
  const set = cleanups;
  set.add(cleanup);
  return () => {
    set.delete(cleanup);
  };
}

/** One server per test process, shared by every file it runs; a failed start is not kept, so a
 *  later test file gets a fresh try. */
export function sharedPerProcess<T>(key: symbol, start: () => Promise<T>): Promise<T> {
  const store = globalThis as Record<symbol, Promise<T> | undefined>;
  const started = (store[key] ??= start());
  started.catch(() => {
    if (store[key] === started) delete store[key];
  });
  return started;
}
