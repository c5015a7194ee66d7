// Red team, quotas: a tenant trying to take more of the skills service than its [quotas] allow
// (calls in flight, live sandboxes, running tasks/services/jobs) is refused with quota_exceeded
// naming the quota, its limit and the count, while another project is served as usual. Two
// skills instances take the calls, so each limit must hold over both (it is counted in
// Postgres), and once the tenant's work ends it may start again.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';

const QUOTAS = {
  CG__QUOTAS__CALLS_PER_PROJECT: '4',
  CG__QUOTAS__SANDBOXES_PER_PROJECT: '2',
  CG__QUOTAS__RUNNING_TASKS_PER_PROJECT: '2',
};

let mesh: SkillsMesh;

beforeAll(async () => {
  mesh = await startSkillsMesh();
  // Two instances on one durable consumer: concurrent calls are spread over both.
  await mesh.startSkills(QUOTAS);
  await mesh.startSkills(QUOTAS);
}, 120_000);

afterAll(async () => {
  await mesh?.close();
});

const call = (project: string, tool: string, args: Record<string, unknown>) =>
  mesh.client.callTool({ project, channel: 'main', tool, arguments: args, timeoutMs: 90_000 });
type Result = Awaited<ReturnType<typeof call>>;

const shown = (r: Result) => JSON.stringify(r.content);

/** Splits results into the succeeded ones and the quota refusals; anything else fails the test. */
function split(results: Result[], quota: string, limit: number) {
  const ok = results.filter((r) => r.status === 'succeeded');
  const refused = results.filter((r) => r.content.error?.code === 'quota_exceeded');
  expect(ok.length + refused.length, results.map(shown).join('\n')).toBe(results.length);
  for (const r of refused) {
    expect(r.status).toBe('failed');
    expect(r.content.error?.details).toEqual({ quota, limit, current: limit });
  }
  return { ok, refused };
}

const newProject = async () => (await mesh.api.createProject()).id;

describe('red team: quotas', () => {
  it('calls in flight: past calls_per_project over both instances, the rest are refused', async () => {
    const tenant = await newProject();
    const other = await newProject();
    const sleeps = Array.from({ length: 7 }, () => call(tenant, 'builtin.sleep', { ms: 3_000 }));
    // Sent once the tenant's calls hold every slot: another project is not counted with them.
    await new Promise((r) => setTimeout(r, 1_000));
    const bystander = await call(other, 'builtin.echo', { hello: 'still served' });
    expect(bystander.status, shown(bystander)).toBe('succeeded');
    const { ok, refused } = split(await Promise.all(sleeps), 'calls', 4);
    expect(ok).toHaveLength(4);
    expect(refused).toHaveLength(3);
    // The slots were given back: the tenant is served again.
    const again = await Promise.all(
      Array.from({ length: 4 }, () => call(tenant, 'builtin.echo', { n: 1 })),
    );
    for (const r of again) expect(r.status, shown(r)).toBe('succeeded');
  }, 60_000);

  it('live sandboxes: a call needing a third sandbox is refused; sessions held go on', async () => {
    const tenant = await newProject();
    const other = await newProject();
    for (const session_id of ['s1', 's2']) {
      const r = await call(tenant, 'skills.run_cmd', { command: 'true', session_id });
      expect(r.status, shown(r)).toBe('succeeded');
    }
    const third = await call(tenant, 'skills.run_cmd', { command: 'true', session_id: 's3' });
    expect(third.status, shown(third)).toBe('failed');
    expect(third.content.error?.code).toBe('quota_exceeded');
    expect(third.content.error?.details).toEqual({ quota: 'sandboxes', limit: 2, current: 2 });
    // The sessions it has are still its own to use, and another project is unaffected.
    const reuse = await call(tenant, 'skills.run_cmd', { command: 'echo ok', session_id: 's1' });
    expect(reuse.status, shown(reuse)).toBe('succeeded');
    const bystander = await call(other, 'skills.run_cmd', { command: 'true', session_id: 's3' });
    expect(bystander.status, shown(bystander)).toBe('succeeded');
  }, 60_000);

  it('live sandboxes at once, over both instances; a call’s own sandbox frees its place', async () => {
    const tenant = await newProject();
    // No agent, no session: each call gets a sandbox of its own, destroyed when it ends.
    const runs = await Promise.all(
      Array.from({ length: 4 }, () => call(tenant, 'skills.run_cmd', { command: 'sleep 3' })),
    );
    const { ok, refused } = split(runs, 'sandboxes', 2);
    expect(ok).toHaveLength(2);
    expect(refused).toHaveLength(2);
    const after = await call(tenant, 'skills.run_cmd', { command: 'echo again' });
    expect(after.status, shown(after)).toBe('succeeded');
  }, 60_000);

  it('running tasks, services and jobs: past running_tasks_per_project they are refused until one ends', async () => {
    const tenant = await newProject();
    const other = await newProject();
    const starts = await Promise.all(
      Array.from({ length: 4 }, () =>
        call(tenant, 'skills.run_cmd_async', {
          command: 'mktemp -p . started-XXXXXX >/dev/null; sleep 60',
          session_id: 'tasks',
        }),
      ),
    );
    const { ok, refused } = split(starts, 'running_tasks', 2);
    expect(ok).toHaveLength(2);
    expect(refused).toHaveLength(2);
    // A refused task ran nothing: only the two admitted ones left their mark (given a moment).
    const marks = await call(tenant, 'skills.run_cmd', {
      command: 'sleep 1; ls started-* | wc -l',
      session_id: 'tasks',
    });
    expect((marks.content.result as { stdout: string }).stdout.trim()).toBe('2');
    // A job and a service count with the tasks.
    const job = await call(tenant, 'skills.start_job', {
      steps: [{ command: 'true' }],
      session_id: 'tasks',
    });
    expect(job.content.error?.code, shown(job)).toBe('quota_exceeded');
    const service = await call(tenant, 'skills.run_service', {
      command: 'sleep 60',
      session_id: 'tasks',
    });
    expect(service.content.error?.code, shown(service)).toBe('quota_exceeded');
    // Another project starts its own.
    const bystander = await call(other, 'skills.run_cmd_async', {
      command: 'true',
      session_id: 'tasks',
    });
    expect(bystander.status, shown(bystander)).toBe('succeeded');
    // Once the tenant's tasks have ended, it may start again.
    for (const r of ok) {
      const { task_id } = r.content.result as { task_id: string };
      const c = await call(tenant, 'skills.task_cancel', { task_id });
      expect(c.status, shown(c)).toBe('succeeded');
    }
    const again = await call(tenant, 'skills.start_job', {
      steps: [{ command: 'true' }],
      session_id: 'tasks',
    });
    expect(again.status, shown(again)).toBe('succeeded');
  }, 90_000);
});
