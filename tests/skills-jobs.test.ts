// The job tools through the whole mesh, with two skills instances: a 3-step job runs its steps
// in order in one sandbox (step 2 reads what step 1 wrote, with its own env) and ends
// succeeded; a failing step fails the job and skips the rest; job_status and job_cancel work
// from the instance that does not run the job (cancel kills the running step's process group:
// no marker process left in /proc; the job ends canceled, later steps skipped); a second
// start_job in a session with a running job is refused; another project's job id is refused
// like an unknown one.
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { collectProgress, startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith, until } from './support/procs.ts';

let mesh: SkillsMesh;
let bStarted = false;
beforeAll(async () => {
  mesh = await startSkillsMesh();
  // One slot, so a watch parked on it forces the next calls onto the second instance.
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

async function secondInstance(): Promise<void> {
  if (bStarted) return;
  bStarted = true;
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-b' });
}

async function instanceThatRan(toolCallId: string): Promise<string> {
  const { rows } = await mesh.api.store.pool.query<{ instance_id: string }>(
    'SELECT instance_id FROM state.tool_executions WHERE tool_call_id = $1',
    [toolCallId],
  );
  return rows[0]!.instance_id;
}

/** Starts a job; the call's own answer says it is still running (it did not wait). */
async function startJob(args: Record<string, unknown>) {
  const r = await call('start_job', args);
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const res = r.content.result as { job_id: string; status: string };
  expect(res.status).toBe('running');
  return { jobId: res.job_id };
}

interface JobView {
  status: string;
  steps: { status: string; exit_code: number | null; stdout: string; stderr: string }[];
}

async function watchToEnd(jobId: string): Promise<JobView> {
  const w = await call('job_watch', { job_id: jobId, timeout_ms: 20_000 });
  expect(w.status, JSON.stringify(w.content)).toBe('succeeded');
  const view = w.content.result as JobView & { watch_timed_out: boolean };
  expect(view.watch_timed_out).toBe(false);
  return view;
}

describe('skills jobs', () => {
  it('runs 3 steps in order in one sandbox, each with its env, and ends succeeded', async () => {
    const { jobId } = await startJob({
      session_id: `jobs-${randomUUID()}`,
      steps: [
        { command: 'sleep 0.5; echo from-step-1 > shared.txt; echo one' },
        {
          command: 'cat shared.txt; printf "%s\\n" "$GREETING"',
          env: { GREETING: 'hi $(x); `y`' },
        },
        { command: 'echo three', timeout_ms: 5_000 },
      ],
    });
    const view = await watchToEnd(jobId);
    expect(view.status).toBe('succeeded');
    expect(view.steps.map((s) => [s.status, s.exit_code, s.stdout])).toEqual([
      ['succeeded', 0, 'one\n'],
      ['succeeded', 0, 'from-step-1\nhi $(x); `y`\n'],
      ['succeeded', 0, 'three\n'],
    ]);
    const head = await mesh.api.store.skillJobs.get(mesh.project.id, jobId);
    expect(head?.steps[2]?.timeout_ms).toBe(5_000);
    // Step times are in order: each began after the one before had ended.
    expect(head!.steps[1]!.started_at! >= head!.steps[0]!.finished_at!).toBe(true);
    expect(head!.steps[2]!.started_at! >= head!.steps[1]!.finished_at!).toBe(true);
  });

  it('a step that exits non-zero fails the job and skips the rest', async () => {
    const { jobId } = await startJob({
      steps: [
        { command: 'echo ok' },
        { command: 'echo bad >&2; exit 3' },
        { command: 'echo never' },
        { command: 'echo never either' },
      ],
    });
    const view = await watchToEnd(jobId);
    expect(view.status).toBe('failed');
    expect(view.steps.map((s) => [s.status, s.exit_code])).toEqual([
      ['succeeded', 0],
      ['failed', 3],
      ['skipped', null],
      ['skipped', null],
    ]);
    expect(view.steps[1]!.stderr).toBe('bad\n');
    expect(view).toMatchObject({ error: { code: 'tool_error' } });
  });

  it('status, a refused second job and cancel mid-step all work from the other instance', async () => {
    const marker = `tm-job-cancel-${randomUUID()}`;
    const session = `jobs-${randomUUID()}`;
    const { jobId } = await startJob({
      session_id: session,
      steps: [
        { command: 'true' },
        { command: `sleep 120 & sleep 121 & wait # ${marker}`, timeout_ms: 600_000 },
        { command: 'echo never' },
      ],
    });
    await until(async () => ((await processesWith(marker)).length > 0 ? true : undefined));

    // The watch parks on instance a's only slot (b does not exist yet), heartbeating each second.
    const { events: beats, sub } = collectProgress(mesh);
    const watchId = `watch-${randomUUID()}`;
    const watch = mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.job_watch',
      toolCallId: watchId,
      arguments: { job_id: jobId, timeout_ms: 20_000, heartbeat_ms: 1_000 },
      timeoutMs: 30_000,
    });
    await until(() => Promise.resolve(beats.length > 0 ? true : undefined));
    await secondInstance();

    const statusId = `status-${randomUUID()}`;
    const status = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.job_status',
      toolCallId: statusId,
      arguments: { job_id: jobId },
      timeoutMs: 30_000,
    });
    expect(status.status, JSON.stringify(status.content)).toBe('succeeded');
    expect(await instanceThatRan(statusId)).toBe('skills-b');
    expect(status.content.result).toMatchObject({
      job_id: jobId,
      status: 'running',
      steps: [
        { status: 'succeeded', exit_code: 0 },
        { status: 'running', exit_code: null },
        { status: 'pending' },
      ],
    });

    const busy = await call('start_job', { session_id: session, steps: [{ command: 'true' }] });
    expect(busy.status).toBe('failed');
    expect(busy.content.error).toMatchObject({
      code: 'tool_error',
      details: { reason: 'session_busy' },
    });

    const cancelId = `cancel-${randomUUID()}`;
    const canceled = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.job_cancel',
      toolCallId: cancelId,
      arguments: { job_id: jobId },
      timeoutMs: 30_000,
    });
    expect(canceled.status, JSON.stringify(canceled.content)).toBe('succeeded');
    expect(await instanceThatRan(cancelId)).toBe('skills-b');
    expect(canceled.content.result).toMatchObject({
      status: 'canceled',
      canceled: true,
      steps: [{ status: 'succeeded' }, { status: 'canceled' }, { status: 'skipped' }],
    });
    expect((await mesh.api.store.skillJobs.get(mesh.project.id, jobId))?.owner_instance).toBe(
      'skills-a',
    );
    expect(await processesWith(marker)).toEqual([]);

    const watched = await watch;
    await sub.drain();
    expect(watched.status, JSON.stringify(watched.content)).toBe('succeeded');
    expect(watched.content.result).toMatchObject({ status: 'canceled', watch_timed_out: false });
    expect(await instanceThatRan(watchId)).toBe('skills-a');
    expect(beats[0]).toMatchObject({
      tool_call_id: watchId,
      tool_name: 'skills.job_watch',
      detail: { job_id: jobId, status: 'running', step: 1 },
    });

    // The session is free again once the job has ended.
    const next = await startJob({ session_id: session, steps: [{ command: 'true' }] });
    expect((await watchToEnd(next.jobId)).status).toBe('succeeded');
    // Already ended: reported as it is, nothing killed.
    const again = await call('job_cancel', { job_id: jobId });
    expect(again.content.result).toMatchObject({ status: 'canceled', canceled: false });
  }, 60_000);

  it("refuses another project's job id like an unknown one", async () => {
    const { jobId } = await startJob({ steps: [{ command: 'true' }] });
    const other = await mesh.api.createProject();
    for (const tool of ['job_status', 'job_watch', 'job_cancel']) {
      const r = await call(tool, { job_id: jobId }, 30_000, other.id);
      expect(r.status).toBe('failed');
      expect(r.content.error).toMatchObject({
        code: 'tool_error',
        details: { reason: 'not_found', job_id: jobId },
      });
    }
    for (const id of [randomUUID(), 'nope']) {
      const r = await call('job_status', { job_id: id });
      expect(r.content.error).toMatchObject({
        code: 'tool_error',
        details: { reason: 'not_found', job_id: id },
      });
    }
  });
});
