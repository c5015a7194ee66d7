// Regression: a skills service killed mid-task leaves its task's head `running` forever. The
// reaper of the next instance must end it `orphaned` (whether it comes back under another id,
// once the dead one misses its heartbeats, or under the same id, at once), and no process of
// the task may be left behind. The same holds for a job: its head ends `orphaned` (the running
// step `orphaned`, the rest `skipped`) and its session takes a new job. A service task's host
// port forwarders, which outlive the service, are killed with it.
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { readFile, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { ChildProcess } from 'node:child_process';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith, until } from './support/procs.ts';

const INTERVAL_MS = 300;

let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const headOf = (taskId: string) => mesh.api.store.skillTasks.get(mesh.project.id, taskId);

const spawnSkills = (instanceId: string) =>
  mesh.spawnSkills({
    CG__SERVICE__INSTANCE_ID: instanceId,
    CG__SKILLS__REAPER_INTERVAL_MS: String(INTERVAL_MS),
  });

/** Starts `sleep 60` as a task (served by the only instance up), then SIGKILLs that instance. */
async function taskOfKilledService(child: ChildProcess, marker: string): Promise<string> {
  const r = await mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: 'skills.run_cmd_async',
    // `& wait` keeps the shell (and the marker in its command line) instead of exec-ing sleep.
    arguments: { command: `sleep 60 & wait # ${marker}` },
    timeoutMs: 30_000,
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const taskId = (r.content.result as { task_id: string }).task_id;
  await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));
  child.kill('SIGKILL');
  await once(child, 'exit');
  expect((await headOf(taskId))?.status).toBe('running');
  return taskId;
}

async function expectOrphanedAndClean(taskId: string, marker: string, withinMs: number) {
  const head = await until(async () => {
    const h = await headOf(taskId);
    return h?.status === 'running' ? undefined : h;
  }, withinMs);
  expect(head?.status).toBe('orphaned');
  expect(head?.finished_at).toBeInstanceOf(Date);
  expect(head?.error).toMatchObject({ code: 'orphaned' });
  await until(async () => ((await processesWith(marker)).length === 0 ? true : undefined), 5_000);
}

describe('skills reaper', () => {
  it('a task of a killed service ends orphaned once another instance sees its owner dead', async () => {
    const marker = `tm-reap-${randomUUID()}`;
    const dead = await spawnSkills(`reap-a-${randomUUID()}`);
    const taskId = await taskOfKilledService(dead, marker);
    const next = await spawnSkills(`reap-b-${randomUUID()}`);
    // Dead after 3 missed heartbeats; a scan every interval.
    await expectOrphanedAndClean(taskId, marker, 10 * INTERVAL_MS + 5_000);
    // The next test's task must go to the instance it kills.
    next.kill('SIGKILL');
    await once(next, 'exit');
  }, 60_000);

  it('a task of a killed service ends orphaned at once when it restarts under the same id', async () => {
    const marker = `tm-reap-${randomUUID()}`;
    const id = `reap-c-${randomUUID()}`;
    const dead = await spawnSkills(id);
    const taskId = await taskOfKilledService(dead, marker);
    const again = await spawnSkills(id);
    // The start-up scan ran before the service took calls.
    expect((await headOf(taskId))?.status).toBe('orphaned');
    await expectOrphanedAndClean(taskId, marker, 1_000);
    again.kill('SIGKILL');
    await once(again, 'exit');
  }, 60_000);

  it('a job of a killed service ends orphaned and frees its session', async () => {
    const marker = `tm-reap-${randomUUID()}`;
    const session = `reap-job-${randomUUID()}`;
    const dead = await spawnSkills(`reap-d-${randomUUID()}`);
    const startJob = (steps: { command: string }[]) =>
      mesh.client.callTool({
        project: mesh.project.id,
        channel: 'main',
        tool: 'skills.start_job',
        arguments: { session_id: session, steps },
        timeoutMs: 30_000,
      });
    const r = await startJob([{ command: `sleep 60 & wait # ${marker}` }, { command: 'true' }]);
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const jobId = (r.content.result as { job_id: string }).job_id;
    const jobOf = () => mesh.api.store.skillJobs.get(mesh.project.id, jobId);
    await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));
    // The running step's pid is written just after the spawn.
    await until(async () => ((await jobOf())?.steps[0]?.pid != null ? true : undefined));
    dead.kill('SIGKILL');
    await once(dead, 'exit');
    expect((await jobOf())?.status).toBe('running');

    const next = await spawnSkills(`reap-e-${randomUUID()}`);
    const head = await until(
      async () => {
        const h = await jobOf();
        return h?.status === 'running' ? undefined : h;
      },
      10 * INTERVAL_MS + 5_000,
    );
    expect(head?.status).toBe('orphaned');
    expect(head?.finished_at).toBeInstanceOf(Date);
    expect(head?.error).toMatchObject({ code: 'orphaned' });
    expect(head?.steps.map((s) => s.status)).toEqual(['orphaned', 'skipped']);
    expect(head?.steps[0]?.finished_at).not.toBeNull();
    await until(async () => ((await processesWith(marker)).length === 0 ? true : undefined), 5_000);

    const again = await startJob([{ command: 'true' }]);
    expect(again.status, JSON.stringify(again.content)).toBe('succeeded');
    next.kill('SIGKILL');
    await once(next, 'exit');
  }, 60_000);

  it('the forwarders of a killed service are killed with its service task', async () => {
    await mesh.uploadSkill(join(import.meta.dirname, '..', 'examples/skills/http-hello'));
    const greeting = `reap${Date.now()}`;
    const id = `reap-f-${randomUUID()}`;
    const dead = await spawnSkills(id);
    const r = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.run_service',
      arguments: {
        skill: 'http-hello',
        command: `python3 server.py --port 8000 --greeting ${greeting}`,
        session_id: `reap-svc-${randomUUID()}`,
        expose_ports: [8000],
      },
      timeoutMs: 60_000,
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const res = r.content.result as { task_id: string; endpoints: { host_port: number }[] };
    // The forwarder's own socket, as the task head records it: a host port can be reused.
    const stored = await headOf(res.task_id);
    const socket = (stored?.endpoints[0] as { forwarder_socket: string }).forwarder_socket;
    const forwarder = `UNIX-LISTEN:${socket},`;
    dead.kill('SIGKILL');
    await once(dead, 'exit');
    // Positive control: the forwarder outlives the service that started it.
    const [fpid] = await processesWith(forwarder);
    expect(fpid).toBeDefined();
    const listen = (await readFile(`/proc/${fpid}/cmdline`, 'utf8')).split('\0')[1]!;
    const socketDir = dirname(listen.replace(/^UNIX-LISTEN:/, '').split(',')[0]!);
    expect((await stat(socketDir)).isDirectory()).toBe(true);

    const again = await spawnSkills(id);
    expect((await headOf(res.task_id))?.status).toBe('orphaned');
    await until(async () =>
      (await processesWith(forwarder)).length === 0 && (await processesWith(greeting)).length === 0
        ? true
        : undefined,
    );
    // Its private socket folder is gone with it.
    await until(() =>
      stat(socketDir).then(
        () => undefined,
        () => true,
      ),
    );
    again.kill('SIGKILL');
    await once(again, 'exit');
  }, 90_000);
});
