// One sandbox of the fake E2B server: a temporary folder standing in for the VM's file system,
// and the processes started in it. Absolute sandbox paths map into the folder (`/home/user/x` is
// `<root>/home/user/x`); commands run for real, with that mapped folder as their working
// directory, so relative paths behave as in E2B while absolute ones in a script see the host.
import { randomBytes } from 'node:crypto';
import { mkdir, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, posix } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import type { ConnectStream } from './fake-e2b-wire.ts';

/** Where relative paths start and `HOME` points, as in E2B's base template. */
export const SANDBOX_HOME = '/home/user';

export const SandboxState = { running: 'running', paused: 'paused' } as const;
export type SandboxState = (typeof SandboxState)[keyof typeof SandboxState];

export interface ProcessConfig {
  readonly cmd: string;
  readonly args: readonly string[];
  readonly envs: Readonly<Record<string, string>>;
  readonly cwd?: string;
}

export interface FakeProcess {
  readonly pid: number;
  readonly tag: string | undefined;
  readonly config: ProcessConfig;
  readonly child: ChildProcess;
  /** Streams (Start, then any Connect) that receive this process's events. */
  readonly subscribers: Set<ConnectStream>;
}

export interface FakeSandbox {
  readonly id: string;
  readonly templateId: string;
  /** The envd access token: envd requests without it are refused. */
  readonly envdAccessToken: string;
  /** The host folder holding the sandbox's file system. */
  readonly root: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly envVars: Readonly<Record<string, string>>;
  /** The create request's `network` (egress rules), kept as sent; the fake does not enforce it. */
  readonly network: unknown;
  readonly startedAt: Date;
  state: SandboxState;
  endAt: Date;
  /** Pause instead of kill when the timeout passes (E2B's `autoPause`). */
  autoPause: boolean;
  timer: NodeJS.Timeout | undefined;
  readonly processes: Map<number, FakeProcess>;
}

export interface NewSandbox {
  readonly templateId: string;
  readonly metadata: Readonly<Record<string, string>>;
  readonly envVars: Readonly<Record<string, string>>;
  readonly network: unknown;
  readonly autoPause: boolean;
}

export async function makeSandbox(spec: NewSandbox): Promise<FakeSandbox> {
  const root = await mkdtemp(join(tmpdir(), 'toolmesh-fake-e2b-'));
  await mkdir(join(root, SANDBOX_HOME), { recursive: true });
  await mkdir(join(root, 'tmp'), { recursive: true });
  const now = new Date();
  return {
    id: `isb${randomBytes(10).toString('hex')}`,
    templateId: spec.templateId,
    envdAccessToken: randomBytes(16).toString('hex'),
    root,
    metadata: spec.metadata,
    envVars: spec.envVars,
    network: spec.network,
    startedAt: now,
    state: 'running',
    endAt: now,
    autoPause: spec.autoPause,
    timer: undefined,
    processes: new Map(),
  };
}

/** The host path of a sandbox path; relative paths start at the home folder. `..` cannot leave. */
export function hostPath(sandbox: FakeSandbox, path: string): string {
  const absolute = path.startsWith('/') ? path : posix.join(SANDBOX_HOME, path);
  return join(sandbox.root, posix.normalize(absolute));
}

/** The sandbox path of a host path inside the sandbox's folder. */
export function sandboxPath(sandbox: FakeSandbox, host: string): string {
  const rel = host.slice(sandbox.root.length);
  return rel === '' ? '/' : rel;
}

/** Sends a signal to a process's whole group (the fake starts each command as a group leader). */
export function signalGroup(proc: FakeProcess, signal: NodeJS.Signals): boolean {
  try {
    process.kill(-proc.pid, signal);
    return true;
  } catch {
    return false;
  }
}

/** Kills every process of the sandbox and deletes its folder. */
export async function disposeSandbox(sandbox: FakeSandbox): Promise<void> {
  if (sandbox.timer) clearTimeout(sandbox.timer);
  const exits = [...sandbox.processes.values()].map(
    (proc) =>
      new Promise<void>((resolve) => {
        if (proc.child.exitCode !== null || proc.child.signalCode !== null) return resolve();
        proc.child.once('close', () => resolve());
        // A stopped (paused) group must be continued to die of anything but SIGKILL; SIGKILL works.
        if (!signalGroup(proc, 'SIGKILL')) resolve();
      }),
  );
  await Promise.all(exits);
  await rm(sandbox.root, { recursive: true, force: true });
}
