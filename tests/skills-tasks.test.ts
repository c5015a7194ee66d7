// The async task tools through the whole mesh, with two skills instances: run_cmd_async returns
// at once and the head ends with the output; status and cancel work from the instance that
// does not run the task (cancel kills the process group: no marker process left in /proc); a
// watch returns the final head and sends heartbeats beside the result; another project's task
// id is refused as not found; an async timeout leaves no process; a long watch does not stop
// other calls from being served.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SkillsService } from '../services/skills/src/app.ts';
import { collectProgress, startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith, until } from './support/procs.ts';

let mesh: SkillsMesh;
let b: SkillsService | undefined;
beforeAll(async () => {
  mesh = await startSkillsMesh();
  // One slot, so a watch parked on it forces the next call onto the second instance.
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-a', CG__TOOLS__CONCURRENCY: '1' });
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const call = (tool: string, args: Record<string, unknown>, timeoutMs = 30_000, project?: string) =>
  mesh.client.callTool({
    project: project ?? mesh.project.id,
    channel: 'main',
    tool: `skills.${tool}`,
    arguments: args,
    timeoutMs,
  });

async function secondInstance(): Promise<SkillsService> {
  b ??= await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-b' });
  return b;
}

const headOf = (taskId: string) => mesh.api.store.skillTasks.get(mesh.project.id, taskId);

/** Starts an async task; the call's own answer says it is still running (it did not wait). */
async function startTask(args: Record<string, unknown>) {
  const r = await call('run_cmd_async', args);
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const res = r.content.result as { task_id: string; status: string };
  expect(res.status).toBe('running');
  return { taskId: res.task_id };
}

async function instanceThatRan(toolCallId: string): Promise<string> {
  const { rows } = await mesh.api.store.pool.query<{ instance_id: string }>(
    'SELECT instance_id FROM state.tool_executions WHERE tool_call_id = $1',
    [toolCallId],
  );
  return rows[0]!.instance_id;
}

describe('skills async tasks', () => {
  it('run_cmd_async returns at once; the head ends succeeded with the output and artifacts', async () => {
    const { taskId } = await startTask({
      command: 'sleep 1; mkdir -p out; echo made > out/a.txt; echo done; echo warn >&2',
      outputs: ['out/a.txt'],
    });
    const head = await until(async () => {
      const h = await headOf(taskId);
      return h && h.status !== 'running' ? h : undefined;
    });
    expect(head).toMatchObject({
      status: 'succeeded',
      exit_code: 0,
      stdout_tail: 'done\n',
      stderr_tail: 'warn\n',
      owner_instance: 'skills-a',
    });
    expect(head.artifacts).toHaveLength(1);
    expect(head.artifacts[0]).toMatchObject({ path: 'out/a.txt', size_bytes: 5 });
  });

  it('cancel sent through the instance that does not run the task kills it; status and watch work there too', async () => {
    const marker = `tm-cancel-${randomUUID()}`;
    const { taskId } = await startTask({
      command: `sleep 120 & sleep 121 & wait # ${marker}`,
      timeout_ms: 600_000,
    });
    await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));
    // The watch parks on instance a's only slot (b does not exist yet), heartbeating each second.
    const { events: beats, sub } = collectProgress(mesh);
    const watchId = `watch-${randomUUID()}`;
    const watch = mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.task_watch',
      toolCallId: watchId,
      arguments: { task_id: taskId, timeout_ms: 20_000, heartbeat_ms: 1_000 },
      timeoutMs: 30_000,
    });
    await until(() => Promise.resolve(beats.length > 0 ? true : undefined));
    await secondInstance();

    const status = await call('task_status', { task_id: taskId });
    expect(status.status, JSON.stringify(status.content)).toBe('succeeded');
    expect(status.content.result).toMatchObject({ task_id: taskId, status: 'running' });

    const cancelId = `cancel-${randomUUID()}`;
    const canceled = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.task_cancel',
      toolCallId: cancelId,
      arguments: { task_id: taskId },
      timeoutMs: 30_000,
    });
    expect(canceled.status, JSON.stringify(canceled.content)).toBe('succeeded');
    expect(canceled.content.result).toMatchObject({ status: 'canceled', canceled: true });
    expect(await instanceThatRan(cancelId)).toBe('skills-b');
    expect((await headOf(taskId))?.owner_instance).toBe('skills-a');
    expect(await processesWith(marker)).toEqual([]);

    const watched = await watch;
    await sub.drain();
    expect(watched.status, JSON.stringify(watched.content)).toBe('succeeded');
    expect(watched.content.result).toMatchObject({
      task_id: taskId,
      status: 'canceled',
      watch_timed_out: false,
    });
    expect(await instanceThatRan(watchId)).toBe('skills-a');
    expect(beats.length).toBeGreaterThan(0);
    expect(beats[0]).toMatchObject({
      tool_call_id: watchId,
      tool_name: 'skills.task_watch',
      detail: { task_id: taskId, status: 'running' },
    });

    // Already ended: reported as it is, nothing killed.
    const again = await call('task_cancel', { task_id: taskId });
    expect(again.content.result).toMatchObject({ status: 'canceled', canceled: false });
  }, 60_000);

  it('a long watch does not stop run_cmd calls from completing', async () => {
    await secondInstance();
    const { taskId } = await startTask({ command: 'sleep 60', timeout_ms: 90_000 });
    let watchEnded = false;
    const watch = call('task_watch', { task_id: taskId, timeout_ms: 60_000 }, 90_000).finally(
      () => (watchEnded = true),
    );
    const runs = await Promise.all([1, 2, 3].map((i) => call('run_cmd', { command: `echo ${i}` })));
    for (const r of runs) expect(r.status).toBe('succeeded');
    // The calls were served while the watch still waited on the running task.
    expect(watchEnded).toBe(false);
    await call('task_cancel', { task_id: taskId });
    const w = await watch;
    expect(w.content.result).toMatchObject({ task_id: taskId, status: 'canceled' });
  }, 120_000);

  it('refuses a task id of another project as not found', async () => {
    const { taskId } = await startTask({ command: 'true' });
    const other = await mesh.api.createProject();
    for (const tool of ['task_status', 'task_watch', 'task_cancel']) {
      const r = await call(tool, { task_id: taskId }, 30_000, other.id);
      expect(r.status).toBe('failed');
      expect(r.content.error).toMatchObject({
        code: 'tool_error',
        details: { reason: 'not_found', task_id: taskId },
      });
    }
    const unknown = await call('task_status', { task_id: randomUUID() });
    const notUuid = await call('task_status', { task_id: 'nope' });
    for (const r of [unknown, notUuid]) {
      expect(r.content.error).toMatchObject({
        code: 'tool_error',
        details: { reason: 'not_found' },
      });
    }
  });

  it('an async task past its time limit ends timeout with no process left', async () => {
    const marker = `tm-timeout-${randomUUID()}`;
    const { taskId } = await startTask({
      command: `sleep 60 & sleep 61 & wait # ${marker}`,
      timeout_ms: 2_000,
    });
    await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));
    const head = await until(async () => {
      const h = await headOf(taskId);
      return h && h.status !== 'running' ? h : undefined;
    });
    expect(head.status).toBe('timeout');
    expect(head.signal).toBe('SIGKILL');
    expect(head.error).toMatchObject({ code: 'timeout' });
    expect(await processesWith(marker)).toEqual([]);
  });
});
