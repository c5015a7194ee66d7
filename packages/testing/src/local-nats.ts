// A nats-server with JetStream run from the local binary: for tests when no Docker engine is
// around, and for `pnpm stack`. The server lives as long as the process that started it.
import { execFile, spawn } from 'node:child_process';
import { promisify } from 'node:util';
import type { ChildProcessByStdio } from 'node:child_process';
import { rmSync } from 'node:fs';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { connect } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { freePort } from './ports.ts';
import { findExecutable, LogTail, onExit, waitUntil } from './processes.ts';

const execFileAsync = promisify(execFile);

export interface LocalNatsOptions {
  /** Client port; a free one by default. */
  port?: number;
  /** JetStream store folder, kept by `close()`; a temporary folder (removed) by default. */
  dir?: string;
  startTimeoutMs?: number;
  /**
   * fsync every JetStream write before it is acknowledged (`sync_interval: always`) where the
   * server has the setting (nats-server 2.10 and later); an older one keeps its fixed two-minute
   * interval. `syncAlways` on the result says which. With `config`, the callback is told.
   */
  syncAlways?: boolean;
  /**
   * A configuration file's text for the port and store folder (e.g. operator mode with JWT
   * auth); the server then starts with `-c` and nothing else on its command line. `syncAlways`:
   * put `sync_interval: always` in its jetstream block (asked for and the server has it).
   */
  config?: (o: { port: number; storeDir: string; syncAlways: boolean }) => Promise<string>;
  /** Sees every chunk of the server's output (e.g. to collect permission violations). */
  onOutput?: (text: string) => void;
  /** Joins a cluster: this node's name, its route port and the other nodes' route URLs. */
  cluster?: { name: string; serverName: string; port: number; routes: string[] };
  /**
   * Runs the server in a process group of its own: a Ctrl-C in the terminal (SIGINT to the
   * whole foreground group) then reaches only the process that started it, which stops the
   * services on it first (`pnpm stack`), instead of the server going away under them.
   */
  ownProcessGroup?: boolean;
}

export interface LocalNats {
  /** `nats://127.0.0.1:<port>` */
  readonly url: string;
  readonly port: number;
  /** The JetStream store folder. */
  readonly dir: string;
  /** The server's version, e.g. `2.9.10`. */
  readonly version: string;
  /** Whether JetStream fsyncs every write before acknowledging it (`sync_interval: always`). */
  readonly syncAlways: boolean;
  /** Starts the server again after `stop()`, on the same port and store. */
  start(): Promise<void>;
  /** Stops the server and keeps its store, so `start()` brings the streams back. */
  stop(): Promise<void>;
  /** SIGKILLs the server (a crash: no clean shutdown) and keeps its store. */
  kill(): Promise<void>;
  /**
   * SIGSTOPs the server: connections stay open but nothing is answered (a stalled server, or a
   * network that drops everything), until `resume()`. Settles once every thread of the server
   * is stopped (a signal is delivered asynchronously; a thread inside a system call stops when
   * it returns from it).
   */
  pause(): Promise<void>;
  /** SIGCONTs a paused server: it reads what waited on its sockets and goes on. */
  resume(): void;
  /** Stops the server and removes the store folder if this module created it. */
  close(): Promise<void>;
}

type Child = ChildProcessByStdio<null, Readable, Readable>;

export async function startLocalNats(options: LocalNatsOptions = {}): Promise<LocalNats> {
  const bin = await findExecutable('nats-server', [
    '/usr/sbin',
    '/usr/local/sbin',
    '/usr/local/bin',
  ]);
  if (bin === undefined) {
    throw new Error(
      'nats-server is not installed (looked on PATH and in /usr/sbin, /usr/local/{s,}bin)',
    );
  }
  const version = await natsServerVersion(bin);
  const syncAlways = options.syncAlways === true && hasSyncInterval(version);
  const created = options.dir === undefined;
  const dir = options.dir ?? (await mkdtemp(join(tmpdir(), 'toolmesh-nats-')));
  await mkdir(dir, { recursive: true });
  const timeoutMs = options.startTimeoutMs ?? 20_000;
  let port = options.port ?? (await freePort());
  let child: Child | undefined;

  const running = (): boolean =>
    child !== undefined && child.exitCode === null && child.signalCode === null;

  const unregister = onExit(() => {
    // A store we keep gets a clean shutdown, which the server finishes after we are gone.
    if (running()) child?.kill(created ? 'SIGKILL' : 'SIGTERM');
    if (created) rmSync(dir, { recursive: true, force: true, maxRetries: 5 });
  });

  async function launch(): Promise<void> {
    const log = new LogTail();
    let args = ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', dir];
    const c = options.cluster;
    if (c !== undefined) {
      args.push('-n', c.serverName, '--cluster_name', c.name);
      args.push('--cluster', `nats://127.0.0.1:${c.port}`, '--routes', c.routes.join(','));
    }
    if (options.config !== undefined) {
      const file = join(dir, 'nats.conf');
      const text = await options.config({ port, storeDir: dir, syncAlways });
      await writeFile(file, text, { mode: 0o600 });
      args = ['-c', file];
    } else if (syncAlways) {
      // No command-line flag for it: a file with just this beside the flags. Not store_dir too:
      // the server refuses it from both the file and -sd.
      const file = join(dir, 'sync.conf');
      await writeFile(file, 'jetstream { sync_interval: always }\n');
      args = ['-c', file, ...args];
    }
    const proc = spawn(bin as string, args, {
      stdio: ['ignore', 'pipe', 'pipe'],
      ...(options.ownProcessGroup ? { detached: true } : {}),
    });
    // Always drain the output: a full pipe would block the server's logging and then the
    // server itself. Unref so that a forgotten server never keeps this process alive.
    const seen = (c: Buffer) => {
      log.push(c);
      options.onOutput?.(c.toString());
    };
    proc.stdout.on('data', seen);
    proc.stderr.on('data', seen);
    proc.unref();
    unrefPipe(proc.stdout);
    unrefPipe(proc.stderr);
    child = proc;
    let failure: Error | undefined;
    proc.on('error', (err) => (failure = err));
    try {
      await waitUntil(
        async () => {
          if (failure !== undefined) throw failure;
          if (proc.exitCode !== null || proc.signalCode !== null) {
            throw new Error(
              `nats-server exited (${proc.exitCode ?? proc.signalCode}) before it was ready`,
            );
          }
          // "Server is ready" proves it is our server on that port, not another one that won
          // the port; INFO with jetstream=true proves JetStream is up for clients.
          return log.text().includes('Server is ready') && (await speaksJetStream(port));
        },
        { timeoutMs, what: `nats-server did not become ready on port ${port}` },
      );
    } catch (err) {
      proc.kill('SIGKILL');
      const message = err instanceof Error ? err.message : String(err);
      throw new Error(`${message}\n--- nats-server output ---\n${log.text()}`, { cause: err });
    }
  }

  // A port chosen by freePort can be taken before the server binds it; pick another then.
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (err) {
      const portTaken = err instanceof Error && /address already in use/i.test(err.message);
      if (!portTaken || options.port !== undefined || attempt >= 3) {
        unregister();
        if (created) await rm(dir, { recursive: true, force: true });
        throw err;
      }
      port = await freePort();
    }
  }

  async function stop(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = child;
    if (proc === undefined || !running()) return;
    const exited = new Promise<void>((resolve) => proc.once('exit', () => resolve()));
    proc.kill(signal);
    // A paused server would not act on the signal before it runs again.
    proc.kill('SIGCONT');
    const timer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(timer);
  }

  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    dir,
    version,
    syncAlways,
    start: async () => {
      if (!running()) await launch();
    },
    stop: () => stop(),
    kill: () => stop('SIGKILL'),
    pause: async () => {
      const proc = child;
      if (proc?.pid === undefined || !running()) return;
      proc.kill('SIGSTOP');
      await waitUntil(() => allStopped(proc.pid!), {
        timeoutMs: 10_000,
        intervalMs: 5,
        what: `nats-server ${proc.pid} did not stop on SIGSTOP`,
      });
    },
    resume: () => {
      if (running()) child?.kill('SIGCONT');
    },
    close: async () => {
      await stop();
      unregister();
      if (created) await rm(dir, { recursive: true, force: true, maxRetries: 5 });
    },
  };
}

/** `nats-server --version` prints `nats-server: v2.9.10`. */
const versions = new Map<string, Promise<string>>();
function natsServerVersion(bin: string): Promise<string> {
  let v = versions.get(bin);
  if (v === undefined) {
    v = readVersion(bin);
    versions.set(bin, v);
    void v.catch(() => versions.delete(bin));
  }
  return v;
}

async function readVersion(bin: string): Promise<string> {
  // execFile resolves once the output is read to its end ('close'), not at 'exit', when the
  // pipe may still hold the line (seen with three servers starting at once).
  const { stdout, stderr } = await execFileAsync(bin, ['--version'], { timeout: 10_000 });
  const out = `${stdout}${stderr}`;
  const version = /v(\d+\.\d+\.\d+)/.exec(out)?.[1];
  if (version === undefined) throw new Error(`cannot tell the version of ${bin} from: ${out}`);
  return version;
}

/**
 * Whether a nats-server of this version takes `sync_interval` (it came with 2.10.0; 2.9 refuses
 * the whole configuration file over the unknown field).
 */
export function hasSyncInterval(version: string): boolean {
  const [major = 0, minor = 0] = version.split('.').map(Number);
  return major > 2 || (major === 2 && minor >= 10);
}

function unrefPipe(stream: Readable): void {
  (stream as Readable & { unref?: () => void }).unref?.();
}

/** Whether a NATS server answers on the port with an INFO that has JetStream enabled. */
function speaksJetStream(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ port, host: '127.0.0.1' });
    let buffer = '';
    const done = (ok: boolean): void => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(1_000, () => done(false));
    socket.on('error', () => done(false));
    socket.on('data', (chunk) => {
      buffer += chunk.toString();
      const end = buffer.indexOf('\r\n');
      if (end < 0) return;
      const line = buffer.slice(0, end);
      try {
        const info = JSON.parse(line.replace(/^INFO\s+/, '')) as { jetstream?: boolean };
        done(line.startsWith('INFO') && info.jetstream === true);
      } catch {
        done(false);
      }
    });
  });
}

/** Whether every thread of a process is stopped (state T in /proc/<pid>/task/<tid>/stat). */
async function allStopped(pid: number): Promise<boolean> {
  const tasks = await readdir(`/proc/${pid}/task`);
  for (const tid of tasks) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    // The state follows the command's closing parenthesis (the command may hold spaces).
    if (stat.slice(stat.lastIndexOf(')') + 2, stat.lastIndexOf(')') + 3) !== 'T') return false;
  }
  return true;
}
