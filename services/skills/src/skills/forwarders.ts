// Host-side port forwarders for skills.run_service: one socat per exposed port, listening on
// 127.0.0.1:<free host port> and, per connection, entering the service's network namespace
// (`nsenter -t <pid> -n`) to connect to the port there. Inside the sandbox a unix socket is not
// an option (sandbox-runtime's seccomp filter refuses socket(AF_UNIX)), and each command has a
// network namespace of its own, so the host reaches the port through that namespace instead.
// Every argument is built from integers only, never from user text; spawn gets an argv array.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { createConnection, createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { readProc } from '@toolmesh/sandbox';

export interface Endpoint {
  port: number;
  host: '127.0.0.1';
  host_port: number;
  url: string;
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

/** True when a TCP connect to 127.0.0.1:port inside the network namespace of `nsPid` succeeds. */
export function answersInside(nsPid: number, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    execFile(
      'nsenter',
      [
        '-t',
        int(nsPid),
        '-n',
        'socat',
        '-u',
        '/dev/null',
        `TCP:127.0.0.1:${int(port)},connect-timeout=1`,
      ],
      { timeout: 3_000 },
      (err) => resolve(err === null),
    );
  });
}

async function freePort(): Promise<number> {
  const srv = createServer();
  srv.listen(0, '127.0.0.1');
  await once(srv, 'listening');
  const addr = srv.address();
  srv.close();
  await once(srv, 'close');
  if (addr === null || typeof addr === 'string') throw new Error('no free port');
  return addr.port;
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
 * Starts a forwarder from a free host port to `port` inside the namespace of `nsPid`; resolves
 * once the host port accepts connections. Retries with another port when one was taken meanwhile.
 */
export async function startForwarder(nsPid: number, port: number): Promise<Forwarder> {
  let lastErr = 'no attempt';
  for (let attempt = 0; attempt < 3; attempt++) {
    const hostPort = await freePort();
    const target = `nsenter -t ${int(nsPid)} -n socat STDIO TCP\\:127.0.0.1\\:${int(port)}`;
    const child = spawn(
      'socat',
      [`TCP-LISTEN:${int(hostPort)},bind=127.0.0.1,reuseaddr,fork`, `EXEC:${target}`],
      { stdio: ['ignore', 'ignore', 'pipe'], detached: true },
    );
    let stderr = '';
    child.stderr?.on('data', (b: Buffer) => (stderr = (stderr + b.toString()).slice(-2_000)));
    child.once('error', (err) => (stderr += String(err)));
    const stop = stopper(child);
    const until = Date.now() + 5_000;
    while (Date.now() < until && child.exitCode === null && child.signalCode === null) {
      if (await tcpAnswers(hostPort, 500)) {
        const info = child.pid === undefined ? undefined : await readProc(child.pid);
        return {
          endpoint: {
            port,
            host: '127.0.0.1',
            host_port: hostPort,
            url: `http://127.0.0.1:${hostPort}`,
            forwarder_pid: child.pid!,
            forwarder_start_time: info?.startTime ?? null,
          },
          stop,
        };
      }
      await sleep(50);
    }
    await stop();
    lastErr = stderr.trim() || 'the forwarder did not listen in time';
  }
  throw new Error(`starting a forwarder for port ${port} failed: ${lastErr}`);
}
