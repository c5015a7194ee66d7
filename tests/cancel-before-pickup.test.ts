// Regression: a cancel sent while no tool-service instance runs is not lost. The call and its
// cancel wait in the stream; an instance started afterwards ends the call `canceled` with one
// card and never runs it (the file its command would write does not exist). A pure tool's call
// (builtin.echo, no lease) ends canceled the same way, through the stored cancel. A cancel sent under
// another project, over HTTP or straight on the bus, does not touch a call of this project.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { expectError, type TestResponse } from '../services/api/src/test/support.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

let mesh: SkillsMesh;
let other: { id: string; key: string };
beforeAll(async () => {
  mesh = await startSkillsMesh();
  other = await mesh.api.createProject();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const session = `cbp-${Date.now()}`;

async function until(what: string, check: () => Promise<boolean>, timeoutMs = 60_000) {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** Queues a command in the session over HTTP without waiting; returns its execution id. */
const queue = (command: string) => queueCall('skills.run_cmd', { command, session_id: session });

/** Queues a call over HTTP without waiting; returns its execution id. */
async function queueCall(tool: string, args: Record<string, unknown>): Promise<string> {
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/executions`, {
    key: mesh.project.key,
    body: { tool, arguments: args, wait: false, timeout_ms: 60_000 },
  });
  expect(res.status, res.raw).toBe(202);
  expect(res.body.execution.status).toBe('queued');
  return res.body.execution.id as string;
}

const execution = (id: string, project = mesh.project) =>
  mesh.api.request('GET', `/v1/projects/${project.id}/executions/${id}`, { key: project.key });

it(
  'a call canceled before any instance runs ends canceled on an instance started later, without running',
  { timeout: 180_000 },
  async () => {
    const canceled = await queue('echo ran > canceled-proof.txt');
    const kept = await queue('echo ran > kept-proof.txt');
    // builtin.echo is a pure tool: its calls take no lease, so no tombstone stops them; the
    // stored cancel does, when the result is filed.
    const pureCanceled = await queueCall('builtin.echo', { text: 'never mind' });
    const pureKept = await queueCall('builtin.echo', { text: 'still wanted' });
    const pureCancel = await mesh.api.request(
      'POST',
      `/v1/projects/${mesh.project.id}/executions/${pureCanceled}/cancel`,
      { key: mesh.project.key, body: { reason: 'not needed' } },
    );
    expect(pureCancel.status, pureCancel.raw).toBe(202);
    // A cancel of the kept echo's id under another project is stored under that project only.
    await mesh.client.cancel({ project: other.id, channel: 'api', toolCallId: pureKept });

    const cancel = await mesh.api.request(
      'POST',
      `/v1/projects/${mesh.project.id}/executions/${canceled}/cancel`,
      { key: mesh.project.key, body: { reason: 'changed my mind' } },
    );
    expect(cancel.status, cancel.raw).toBe(202);
    // Another project can neither name this execution over HTTP nor cancel it on the bus.
    const foreign = await mesh.api.request(
      'POST',
      `/v1/projects/${other.id}/executions/${kept}/cancel`,
      { key: other.key },
    );
    expectError(foreign, 404, 'not_found');
    await mesh.client.cancel({ project: other.id, channel: 'api', toolCallId: kept });

    // Only now does a skills service start: no instance heard those cancels.
    await mesh.startSkills();

    let done: TestResponse | undefined;
    await until('the canceled call has its result', async () => {
      done = await execution(canceled);
      return done.body.execution.status !== 'queued' && done.body.execution.status !== 'running';
    });
    expect(done?.body.execution).toMatchObject({ status: 'canceled', error_code: 'canceled' });
    expect(done?.body.card.content).toMatchObject({
      status: 'canceled',
      error: { code: 'canceled', message: 'canceled: changed my mind' },
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, canceled)).toBe(1);

    let pure: TestResponse | undefined;
    await until('the canceled echo has its result', async () => {
      pure = await execution(pureCanceled);
      return pure.body.execution.status !== 'queued' && pure.body.execution.status !== 'running';
    });
    expect(pure?.body.execution).toMatchObject({ status: 'canceled', error_code: 'canceled' });
    expect(pure?.body.card.content).toMatchObject({
      status: 'canceled',
      error: { code: 'canceled', message: 'canceled: not needed' },
    });
    expect(pure?.body.card.content.result).toBeUndefined();
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, pureCanceled)).toBe(1);
    await until(
      'the echo nobody canceled succeeded',
      async () => (await execution(pureKept)).body.execution.status === 'succeeded',
    );
    expect((await execution(pureKept)).body.card.content.result).toEqual({ text: 'still wanted' });
    const stored = await mesh.api.store.pool.query<{ project_id: string }>(
      'SELECT project_id FROM state.call_cancels WHERE tool_call_id = $1',
      [pureKept],
    );
    expect(stored.rows).toEqual([{ project_id: other.id }]);

    await until(
      'the call canceled under another project ran',
      async () => (await execution(kept)).body.execution.status === 'succeeded',
    );
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, kept)).toBe(1);

    // The session's workdir shows which commands ran: the kept one, not the canceled one.
    const look = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.run_cmd',
      arguments: { command: 'ls *-proof.txt', session_id: session },
      timeoutMs: 60_000,
    });
    expect(look.status, JSON.stringify(look.content)).toBe('succeeded');
    expect((look.content.result as { stdout: string }).stdout.trim().split('\n')).toEqual([
      'kept-proof.txt',
    ]);

    // A second cancel of the finished call changes nothing.
    const again = await mesh.api.request(
      'POST',
      `/v1/projects/${mesh.project.id}/executions/${canceled}/cancel`,
      { key: mesh.project.key },
    );
    expectError(again, 409, 'conflict');
  },
);
