// Host-side port forwarders for skills.run_service, one per exposed port. Each is a socat that
// listens on a unix socket in a 0700 folder of this service's user (nobody else on the host can
// connect) and connects, per connection, to the port on the sandbox's loopback. Inside the
// sandbox a unix socket is not an option (sandbox-runtime's seccomp filter refuses
// socket(AF_UNIX)), and each command has a network namespace of its own. So the socat itself runs
// in that namespace, entered through enter-net.py (see there: it joins the user namespace that
// owns the network, which the service's own user created, so no root is needed). It stays in the
// host's mount namespace, so its socket is a file in our private folder. Every argument is built
// from integers and our own temp folder only, never from user text; spawn gets an argv array. In
// front of the socket sits the endpoint gate (endpoint-gate.ts) on 127.0.0.1, on the service's
// own port when that is free: the only way in, with the endpoint's bearer token.
import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, rm } from 'node:fs/promises';
import { createConnection } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { readProc } from '@toolmesh/sandbox';
import type { Logger } from 'pino';
import { startEndpointGate } from './endpoint-gate.ts';

/** Runs a command in the network namespace of a pid (see its header). */
const ENTER_NET = join(import.meta.dirname, 'enter-net.py');
const inNetOf = (nsPid: number, argv: string[]) => [ENTER_NET, int(nsPid), ...argv];

/** The prefix of a forwarder's private socket folder under the host's temp dir. */
export const FORWARDER_DIR_PREFIX = 'toolmesh-fwd-';

export interface Endpoint {
  port: number;
  host: '127.0.0.1';
  host_port: number;
  /** True when the service's own port was busy (or below 1024) and host_port is another. */
  host_port_fallback: boolean;
  url: string;
  /** The bearer token the gate wants; returned to the caller once, never stored. */
  token: string;
  /** The unix socket the forwarder listens on (inside a 0700 folder of ours). */
  forwarder_socket: string;
  /** The forwarder's pid and /proc start time: with its command line, proof it is ours. */
  forwarder_pid: number;
  forwarder_start_time: string | null;
}

export interface Forwarder {
  readonly endpoint: Endpoint;
  /** Kills the forwarder's process group (its connections too); resolves once it has exited. */
  stop(): Promise<void>;
}

const int = (n: number) => {
  if (!Number.isInteger(n) || n < 0) throw new Error(`not a port or pid: ${n}`);
  return String(n);
};

/** True when a TCP connect to 127.0.0.1:port succeeds within `ms`. */
export function tcpAnswers(port: number, ms = 1_000): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(ms, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

/**
 * Waits, inside the network namespace of `nsPid`, until every port accepts a TCP connection on
 * 127.0.0.1; resolves with the ports that still did not when `signal` aborts (empty: all ready).
 * The namespace is entered once per wait, not once per probe: starting the helper costs far more
 * than a probe. Ports travel as arguments, never as script text.
 */
export async function waitListening(
  nsPid: number,
  ports: readonly number[],
  signal: AbortSignal,
): Promise<number[]> {
  const loop = [
    'pending=("$@")',
    'while :; do',
    '  left=()',
    '  for p in "${pending[@]}"; do',
    '    if (exec 3<>"/dev/tcp/127.0.0.1/$p") 2>/dev/null; then echo "$p"; else left+=("$p"); fi',
    '  done',
    '  pending=("${left[@]}")',
    '  [ ${#pending[@]} -eq 0 ] && exit 0',
    '  sleep 0.1',
    'done',
  ].join('\n');
  const argv = inNetOf(nsPid, ['bash', '-c', loop, 'probe', ...ports.map(int)]);
  const child = spawn('python3', argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  let stderr = '';
  const exited = new Promise<number | null>((resolve) => {
    child.once('exit', (code) => resolve(code));
    child.once('error', (err) => {
      stderr += String(err);
      resolve(null);
    });
  });
  const kill = () => child.kill('SIGKILL');
  if (signal.aborted) kill();
  else signal.addEventListener('abort', kill, { once: true });
  // One answered port per line; a chunk may end mid-line.
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-2_000)));
  const code = await exited;
  signal.removeEventListener('abort', kill);
  const ready = new Set(
    out
      .split('\n')
      .slice(0, -1) // complete lines only
      .filter((l) => /^\d+$/.test(l))
      .map(Number),
  );
  const pending = ports.filter((p) => !ready.has(p));
  if (code !== 0 && !signal.aborted) {
    throw new Error(`probing ports ${ports.join(', ')} failed: ${stderr.trim() || `exit ${code}`}`);
  }
  return pending;
}

/** True when a unix socket accepts a connection within `ms`. */
function socketAnswers(path: string, ms = 500): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ path });
    const done = (ok: boolean) => {
      s.destroy();
      resolve(ok);
    };
    s.setTimeout(ms, () => done(false));
    s.once('connect', () => done(true));
    s.once('error', () => done(false));
  });
}

function stopper(child: ChildProcess): () => Promise<void> {
  return async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = once(child, 'exit');
    // Until we see its exit the pid (and its group id) cannot be reused: the group is ours.
    try {
      process.kill(-child.pid!, 'SIGKILL');
    } catch {
      child.kill('SIGKILL');
    }
    await exited;
  };
}

/**
 * Starts the gate on 127.0.0.1 (on `port` itself when free, else on a free port) and a forwarder
 * from a private unix socket to `port` inside the namespace of `nsPid`; resolves once the socket
 * accepts connections.
 */
export async function startForwarder(
  nsPid: number,
  port: number,
  logger: Logger,
): Promise<Forwarder> {
  const dir = await mkdtemp(join(tmpdir(), FORWARDER_DIR_PREFIX));
  let socketPath = '';
  const gate = await startEndpointGate(() => socketPath, logger, port).catch(
    async (err: unknown) => {
      await rm(dir, { recursive: true, force: true });
      throw err;
    },
  );
  socketPath = join(dir, `${gate.hostPort}.sock`);
  const socat = ['socat', `UNIX-LISTEN:${socketPath},fork,mode=600`, `TCP:127.0.0.1:${int(port)}`];
  // Detached: the forwarder leads its own process group (the reaper's proof that it is ours).
  const child = spawn('python3', inNetOf(nsPid, socat), {
    stdio: ['ignore', 'ignore', 'pipe'],
    detached: true,
  });
  let stderr = '';
  child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-2_000)));
  child.once('error', (err) => (stderr += String(err)));
  const killSocat = stopper(child);
  const stop = async () => {
    await gate.close();
    await killSocat();
    await rm(dir, { recursive: true, force: true });
  };
  const until = Date.now() + 5_000;
  while (Date.now() < until && child.exitCode === null && child.signalCode === null) {
    if (await socketAnswers(socketPath)) {
      const info = child.pid === undefined ? undefined : await readProc(child.pid);
      return {
        endpoint: {
          port,
          host: '127.0.0.1',
          host_port: gate.hostPort,
          host_port_fallback: gate.hostPort !== port,
          url: `http://127.0.0.1:${gate.hostPort}`,
          token: gate.token,
          forwarder_socket: socketPath,
          forwarder_pid: child.pid!,
          forwarder_start_time: info?.startTime ?? null,
        },
        stop,
      };
    }
    await sleep(50);
  }
  await stop();
  throw new Error(
    `starting a forwarder for port ${port} failed: ${stderr.trim() || 'the forwarder did not listen in time'}`,
  );
}
