// An agent's call that its tool config makes wait for a person, through the api, a skills
// service, an agent worker and the scripted model: the call is parked (the agent waits, past
// its tool deadline, without giving up), a person denies it, and the model's next request
// carries the denial (approval_denied, who and why) as that tool's result. The same tool
// attached without approval to another agent runs at once.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  // A short tool deadline: the approval wait must not count against it.
  mesh = await startAgentMesh({ CG__AGENT__TOOL_DEADLINE_MS: '2000' });
  await mesh.startSkills();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const api = (method: 'GET' | 'POST', url: string, body?: unknown) =>
  mesh.api.request(method, `/v1/projects/${mesh.project.id}${url}`, {
    key: mesh.project.key,
    body,
  });

describe('approvals and agents', () => {
  it("an agent sees a denial as the tool's result", async () => {
    const agent = await mesh.createAgent({
      id: 'careful',
      allowedTools: ['builtin.echo'],
      script: [
        { toolCalls: [{ name: 'builtin__echo', arguments: { text: 'delete prod' } }] },
        { toolCalls: [{ name: 'submit_result', arguments: { result: 'gave up' } }] },
      ],
    });
    const attached = await api('POST', `/agents/${agent}/tools`, {
      tool: 'builtin.echo',
      config: { approval: 'required' },
    });
    expect(attached.status, attached.raw).toBe(201);
    const taskId = await mesh.startTask(agent, 'delete prod');
    const pending = await until(async () => {
      const r = await api('GET', '/approvals');
      return (r.body.approvals as { approval_id: string; agent_id: string }[]).find(
        (a) => a.agent_id === agent,
      );
    }, 30_000);
    expect(pending).toMatchObject({
      tool_name: 'builtin.echo',
      // The approval keys of the config are the gate's, not arguments.
      arguments: { text: 'delete prod' },
      required_by: { source: 'agent', mode: 'required' },
    });
    // Well past the agent's 2 s tool deadline, the task still waits for the person.
    const row = await mesh.api.store.approvals.get(mesh.project.id, pending.approval_id);
    await until(
      () => Promise.resolve(Date.now() > row!.requested_at.getTime() + 4_000 ? true : undefined),
      10_000,
    );
    const task = await api('GET', `/tasks/${taskId}`);
    expect(task.body.status, task.raw).toBe('running');
    expect(mesh.requestsOf(agent)).toHaveLength(1);

    const denied = await api('POST', `/approvals/${pending.approval_id}/deny`, {
      reason: 'production is frozen',
    });
    expect(denied.status, denied.raw).toBe(200);
    const done = await mesh.finished(taskId, 60_000);
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const second = mesh.requestsOf(agent)[1]!;
    const tool = second.body.messages.find((m) => m.role === 'tool');
    const seen = JSON.parse(String(tool!.content)) as {
      status: string;
      error: { code: string; message: string; details: Record<string, unknown> };
    };
    expect(seen.status).toBe('failed');
    expect(seen.error.code).toBe('approval_denied');
    expect(seen.error.message).toContain('production is frozen');
    expect(seen.error.details).toMatchObject({ reason: 'production is frozen' });
    expect(String(seen.error.details['decided_by'])).toMatch(/^key:/);
  });

  it('the same tool attached without approval to another agent runs at once', async () => {
    const agent = await mesh.createAgent({
      id: 'trusted',
      allowedTools: ['builtin.echo'],
      script: [
        { toolCalls: [{ name: 'builtin__echo', arguments: { text: 'hello' } }] },
        { toolCalls: [{ name: 'submit_result', arguments: { result: 'ok' } }] },
      ],
    });
    await api('POST', `/agents/${agent}/tools`, { tool: 'builtin.echo', config: {} });
    const done = await mesh.finished(await mesh.startTask(agent, 'say hello'));
    expect(done.status, JSON.stringify(done)).toBe('succeeded');
    const tool = mesh.requestsOf(agent)[1]!.body.messages.find((m) => m.role === 'tool');
    expect(JSON.parse(String(tool!.content))).toMatchObject({ status: 'succeeded' });
  });
});
