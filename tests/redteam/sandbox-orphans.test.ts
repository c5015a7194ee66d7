// Red team, sandbox leftovers: a skills service killed with SIGKILL (an OOM kill, a crash, a
// `kill -9` by an operator) must not leave processes running on the host once the reaper or
// the next instance has passed: not sandbox-runtime's socat bridge (root, outside any sandbox,
// which nothing ended before), not a warm sandbox's bwrap, not a background command's. Found
// by a /proc scan of everything the killed service had started, each proven by its start time.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readdir, readFile } from 'node:fs/promises';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createLocalSandboxReaper } from '@toolmesh/sandbox';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';
import { processesWith, until } from '../support/procs.ts';

let mesh: SkillsMesh;
let sandboxRoot = '';
beforeAll(async () => {
  mesh = await startSkillsMesh();
  sandboxRoot = mesh.api.env['CG__SANDBOX__ROOT_DIR']!;
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

interface Proc {
  readonly pid: number;
  readonly startTime: string;
  readonly comm: string;
}

async function stat(
  pid: number,
): Promise<{ ppid: number; startTime: string; comm: string; state: string }> {
  const text = await readFile(`/proc/${pid}/stat`, 'utf8').catch(() => '');
  const close = text.lastIndexOf(')');
  const fields = text.slice(close + 2).split(' ');
  return {
    comm: text.slice(text.indexOf('(') + 1, close),
    state: fields[0] ?? '',
    ppid: Number(fields[1]),
    startTime: fields[19] ?? '',
  };
}

/** Every live process descending from `root`, with its start time (pids get reused). */
async function descendants(root: number): Promise<Proc[]> {
  const all = new Map<number, { ppid: number; startTime: string; comm: string }>();
  for (const entry of await readdir('/proc')) {
    if (/^\d+$/.test(entry)) all.set(Number(entry), await stat(Number(entry)));
  }
  const out: Proc[] = [];
  const walk = (pid: number): void => {
    for (const [child, s] of all) {
      if (s.ppid !== pid || s.startTime === '') continue;
      out.push({ pid: child, startTime: s.startTime, comm: s.comm });
      walk(child);
    }
  };
  walk(root);
  return out;
}

/**
 * The processes of `procs` still alive. A zombie is dead, only not yet reaped: under an init
 * that does not reap orphans (pid 1 of a container or of check:fresh's pid namespace is the
 * command it runs) a killed orphan stays one, holding nothing but its pid.
 */
async function stillRunning(procs: readonly Proc[]): Promise<Proc[]> {
  const left: Proc[] = [];
  for (const p of procs) {
    const now = await stat(p.pid);
    if (now.startTime === p.startTime && now.state !== 'Z' && now.state !== 'X') left.push(p);
  }
  return left;
}

const call = (tool: string, args: Record<string, unknown>) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool,
    arguments: args,
    timeoutMs: 60_000,
  });

/**
 * A skills service as a child process with a warm session sandbox and a background task, then
 * SIGKILLed. Returns what it had started.
 */
async function killedServiceWithSandboxes(): Promise<Proc[]> {
  const child: ChildProcess = await mesh.spawnSkills();
  const marker = `tm-orphan-${randomUUID()}`;
  const warm = await call('skills.run_cmd', {
    command: 'echo warm',
    session_id: `warm-${randomUUID()}`,
  });
  expect(warm.status, JSON.stringify(warm.content)).toBe('succeeded');
  const task = await call('skills.run_cmd_async', { command: `sleep 600 & wait # ${marker}` });
  expect(task.status, JSON.stringify(task.content)).toBe('succeeded');
  await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));
  const started = await descendants(child.pid!);
  // Positive control: the bridge, the warm executor's and the task's bwraps were running.
  expect(started.filter((p) => p.comm === 'socat').length).toBeGreaterThan(0);
  expect(started.filter((p) => p.comm === 'bwrap').length).toBeGreaterThanOrEqual(2);
  child.kill('SIGKILL');
  await once(child, 'exit');
  return started;
}

describe('red team: a skills service killed with SIGKILL leaves nothing running', () => {
  it('once the sandbox-reaper has swept its root', async () => {
    const started = await killedServiceWithSandboxes();
    const reaper = await createLocalSandboxReaper({ rootDir: sandboxRoot });
    try {
      await reaper.sweep();
      // Processes SIGKILLed a moment ago may still be on their way out.
      const left = await until(async () => {
        const l = await stillRunning(started);
        return l.length === 0 ? l : undefined;
      }, 10_000).catch(async () => stillRunning(started));
      expect(left).toEqual([]);
    } finally {
      await reaper.close();
    }
  }, 120_000);

  it('once the next instance has started on the same root', async () => {
    const started = await killedServiceWithSandboxes();
    const next = await mesh.spawnSkills();
    try {
      const left = await until(async () => {
        const l = await stillRunning(started);
        return l.length === 0 ? l : undefined;
      }, 10_000).catch(async () => stillRunning(started));
      expect(left).toEqual([]);
    } finally {
      next.kill('SIGKILL');
      await once(next, 'exit');
      // Its own bridge, left by that kill, goes with the next sweep.
      const reaper = await createLocalSandboxReaper({ rootDir: sandboxRoot });
      await reaper.sweep();
      await reaper.close();
    }
  }, 120_000);
});
