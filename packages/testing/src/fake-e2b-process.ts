// envd's `process.Process` service for the fake E2B server: Start (streamed start, output and
// end events, with the exit code), Connect to a running process, List, SendSignal, SendInput,
// CloseStdin. Commands run for real (`spawn`) as leaders of their own process group, so a
// signal reaches everything a command started, and a paused sandbox can stop them all.
import { spawn } from 'node:child_process';
import { stat } from 'node:fs/promises';
import type { IncomingMessage, ServerResponse } from 'node:http';
import { hostPath, SANDBOX_HOME, signalGroup } from './fake-e2b-sandbox.ts';
import type { FakeProcess, FakeSandbox, ProcessConfig } from './fake-e2b-sandbox.ts';
import { ConnectError, openStream, sendUnary } from './fake-e2b-wire.ts';
import type { ConnectStream } from './fake-e2b-wire.ts';

interface Selector {
  readonly pid?: number;
  readonly tag?: string;
}

interface StartRequest {
  readonly process?: Partial<ProcessConfig>;
  readonly tag?: string;
  readonly stdin?: boolean;
}

/** Signal enum of envd's proto, in its JSON (name) and numeric forms. */
const SIGNALS: Readonly<Record<string, NodeJS.Signals>> = {
  SIGNAL_SIGKILL: 'SIGKILL',
  SIGNAL_SIGTERM: 'SIGTERM',
  '9': 'SIGKILL',
  '15': 'SIGTERM',
};

/** Go's names for the signals a command may die of, as envd's `status` spells them. */
const GO_SIGNAL_NAMES: Readonly<Partial<Record<NodeJS.Signals, string>>> = {
  SIGKILL: 'killed',
  SIGTERM: 'terminated',
  SIGINT: 'interrupt',
  SIGHUP: 'hangup',
};

export interface ProcessCall {
  readonly method: string;
  readonly message: unknown;
  readonly req: IncomingMessage;
  readonly res: ServerResponse;
}

export async function processRpc(sandbox: FakeSandbox, call: ProcessCall): Promise<void> {
  const { method, message, req, res } = call;
  switch (method) {
    case 'Start':
      return start(sandbox, message as StartRequest, req, res);
    case 'Connect': {
      const proc = find(sandbox, (message as { process?: Selector }).process);
      const stream = openStream(req, res);
      keepAlive(req, stream);
      stream.send({ event: { start: { pid: proc.pid } } });
      subscribe(proc, stream);
      return;
    }
    case 'List':
      return sendUnary(res, {
        processes: [...sandbox.processes.values()].map((p) => ({
          config: p.config,
          pid: p.pid,
          ...(p.tag === undefined ? {} : { tag: p.tag }),
        })),
      });
    case 'SendSignal': {
      const { process: selector, signal } = message as { process?: Selector; signal?: unknown };
      const proc = find(sandbox, selector);
      const name = SIGNALS[String(signal)];
      if (name === undefined)
        throw new ConnectError('invalid_argument', `unknown signal ${String(signal)}`);
      signalGroup(proc, name);
      // A stopped group (paused sandbox) only acts on a signal once it runs again.
      signalGroup(proc, 'SIGCONT');
      return sendUnary(res, {});
    }
    case 'SendInput': {
      const { process: selector, input } = message as {
        process?: Selector;
        input?: { stdin?: string; pty?: string };
      };
      const proc = find(sandbox, selector);
      if (!proc.child.stdin) throw new ConnectError('failed_precondition', 'stdin is not enabled');
      proc.child.stdin.write(Buffer.from(input?.stdin ?? input?.pty ?? '', 'base64'));
      return sendUnary(res, {});
    }
    case 'CloseStdin': {
      const proc = find(sandbox, (message as { process?: Selector }).process);
      proc.child.stdin?.end();
      return sendUnary(res, {});
    }
    case 'Update':
      find(sandbox, (message as { process?: Selector }).process);
      return sendUnary(res, {});
    default:
      throw new ConnectError('unimplemented', `process.Process/${method} is not implemented`);
  }
}

/** `/home/user` where it begins a path (not `/home/username`). */
const SANDBOX_PATH = new RegExp(`${SANDBOX_HOME}(?=/|$|[\\s'"\`:;])`, 'g');

const mapValues = (o: Record<string, string>, f: (v: string) => string) =>
  Object.fromEntries(Object.entries(o).map(([k, v]) => [k, f(v)]));

async function start(
  sandbox: FakeSandbox,
  request: StartRequest,
  req: IncomingMessage,
  res: ServerResponse,
): Promise<void> {
  const config: ProcessConfig = {
    cmd: request.process?.cmd ?? '',
    args: request.process?.args ?? [],
    envs: request.process?.envs ?? {},
    ...(request.process?.cwd === undefined ? {} : { cwd: request.process.cwd }),
  };
  if (config.cmd === '') throw new ConnectError('invalid_argument', 'process.cmd is required');
  const cwd = hostPath(sandbox, config.cwd ?? SANDBOX_HOME);
  const dir = await stat(cwd).catch(() => undefined);
  if (!dir?.isDirectory()) {
    throw new ConnectError('invalid_argument', `cwd '${config.cwd ?? ''}' does not exist`);
  }
  // A command names sandbox paths (`/home/user/...`, as a real VM has them); here they are the
  // sandbox's folder on this host, in the command line and the environment alike.
  const home = hostPath(sandbox, SANDBOX_HOME);
  const mapped = (text: string) => text.replace(SANDBOX_PATH, home);
  const child = spawn(mapped(config.cmd), config.args.map(mapped), {
    cwd,
    detached: true,
    stdio: [request.stdin === true ? 'pipe' : 'ignore', 'pipe', 'pipe'],
    // The sandbox's own environment, never the host's: what a command sees is what it was given.
    env: {
      PATH: process.env.PATH ?? '/usr/local/bin:/usr/bin:/bin',
      HOME: hostPath(sandbox, SANDBOX_HOME),
      USER: 'user',
      LANG: 'C.UTF-8',
      ...mapValues(sandbox.envVars, mapped),
      ...mapValues(config.envs, mapped),
    },
  });
  await new Promise<void>((resolve, reject) => {
    child.once('spawn', resolve);
    child.once('error', (err) =>
      reject(new ConnectError('invalid_argument', `cannot start ${config.cmd}: ${err.message}`)),
    );
  });
  const pid = child.pid!;
  const proc: FakeProcess = { pid, tag: request.tag, config, child, subscribers: new Set() };
  sandbox.processes.set(pid, proc);
  child.stdin?.on('error', () => undefined);

  // Subscribed before any output can arrive: the start event comes first, then every byte.
  const stream = openStream(req, res);
  keepAlive(req, stream);
  stream.send({ event: { start: { pid } } });
  subscribe(proc, stream);

  const broadcast = (event: unknown): void => {
    for (const subscriber of proc.subscribers) subscriber.send({ event });
  };
  child.stdout!.on('data', (chunk: Buffer) =>
    broadcast({ data: { stdout: chunk.toString('base64') } }),
  );
  child.stderr!.on('data', (chunk: Buffer) =>
    broadcast({ data: { stderr: chunk.toString('base64') } }),
  );
  child.once('close', (code, signal) => {
    sandbox.processes.delete(pid);
    // As envd reports it: Go's ProcessState (`exit status 3`, `signal: killed`, exit code -1).
    const status =
      code !== null ? `exit status ${code}` : `signal: ${GO_SIGNAL_NAMES[signal!] ?? signal}`;
    broadcast({
      end: {
        exitCode: code ?? -1,
        exited: code !== null,
        status,
        ...(code === 0 ? {} : { error: status }),
      },
    });
    for (const subscriber of proc.subscribers) subscriber.end();
    proc.subscribers.clear();
  });
}

function subscribe(proc: FakeProcess, stream: ConnectStream): void {
  proc.subscribers.add(stream);
  // A client that goes away stops listening; the process lives on, as in envd.
  stream.onClose(() => proc.subscribers.delete(stream));
}

/** Keepalive events at the interval (seconds) the client asks for in `Keepalive-Ping-Interval`. */
function keepAlive(req: IncomingMessage, stream: ConnectStream): void {
  const seconds = Number(req.headers['keepalive-ping-interval']);
  if (!(seconds > 0)) return;
  const timer = setInterval(() => stream.send({ event: { keepalive: {} } }), seconds * 1000);
  timer.unref();
  stream.onClose(() => clearInterval(timer));
}

function find(sandbox: FakeSandbox, selector: Selector | undefined): FakeProcess {
  const pid = selector?.pid;
  const proc =
    pid !== undefined
      ? sandbox.processes.get(Number(pid))
      : [...sandbox.processes.values()].find(
          (p) => selector?.tag !== undefined && p.tag === selector.tag,
        );
  if (!proc) {
    throw new ConnectError('not_found', `process with ${JSON.stringify(selector ?? {})} not found`);
  }
  return proc;
}
