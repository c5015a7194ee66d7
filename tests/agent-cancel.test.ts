// Task cancel through the api and the CLI: the turn stops, the tool call it waits on is
// canceled where it runs (its result card says canceled, long before its sleep would end), the
// task ends canceled with a final card, and another project's key changes nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { runToolmesh } from './support/cli.ts';
import { until } from './support/procs.ts';

let mesh: AgentMesh;
let apiUrl: string;
beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startSkills();
  await mesh.startWorker();
  apiUrl = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const api = (method: 'GET' | 'POST', url: string, body?: unknown, key = mesh.project.key) =>
  mesh.api.request(method, `/v1/projects/${mesh.project.id}${url}`, { key, body });

/** Starts a task whose agent sleeps for a minute, and waits until the sleep runs. */
async function sleepingTask(id: string): Promise<{ taskId: string; toolCallId: string }> {
  const agent = await mesh.createAgent({
    id,
    allowedTools: ['builtin.sleep'],
    script: [{ toolCalls: [{ name: 'builtin__sleep', arguments: { ms: 60_000 } }] }],
  });
  const taskId = await mesh.startTask(agent, 'sleep for a minute');
  const store = mesh.api.store;
  const toolCallId = await until(async () => {
    const turn = await store.turns.byTask(mesh.project.id, taskId);
    if (turn?.status !== 'waiting') return undefined;
    const [call] = await store.turns.calls(turn.turn_id);
    const exec = call ? await store.executions.get(mesh.project.id, call.tool_call_id) : undefined;
    return exec?.status === 'running' ? call!.tool_call_id : undefined;
  }, 20_000);
  return { taskId, toolCallId };
}

async function expectCanceledCall(toolCallId: string) {
  const card = await until(
    () => mesh.api.store.cards.toolResult(mesh.project.id, toolCallId),
    10_000,
  );
  expect(card.content).toMatchObject({ status: 'canceled', error: { code: 'canceled' } });
  expect((card.content as { duration_ms: number }).duration_ms).toBeLessThan(60_000);
}

describe('task cancel', () => {
  it("POST .../tasks/:id/cancel ends the task canceled and cancels its running call; another project's key is refused", async () => {
    const { taskId, toolCallId } = await sleepingTask('cancel-api');

    const other = await mesh.api.createProject();
    const refused = await api('POST', `/tasks/${taskId}/cancel`, {}, other.key);
    expect(refused.status).toBe(404);
    const across = await mesh.api.request(
      'POST',
      `/v1/projects/${other.id}/tasks/${taskId}/cancel`,
      {
        key: other.key,
        body: {},
      },
    );
    expect(across.status).toBe(404);
    expect((await api('GET', `/tasks/${taskId}`)).body).toMatchObject({ status: 'running' });

    const res = await api('POST', `/tasks/${taskId}/cancel`, { reason: 'user changed mind' });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      status: 'canceled',
      error: { code: 'canceled', message: 'user changed mind' },
      final_card: { kind: 'final', content: { status: 'canceled' } },
      canceled_calls: [{ tool_call_id: toolCallId, tool_name: 'builtin.sleep' }],
    });
    await expectCanceledCall(toolCallId);
    const event = await until(() =>
      Promise.resolve(
        mesh.taskEvents().find((e) => e.task_id === taskId && e.status === 'canceled'),
      ),
    );
    expect(event.card_id).toBe(
      (res.body as { final_card: { card_id: string } }).final_card.card_id,
    );

    // The canceled result arrived and woke the agent; the turn stays canceled, the model is
    // not asked again, and a second cancel is a conflict.
    await new Promise((r) => setTimeout(r, 600));
    expect(mesh.requestsOf('cancel-api')).toHaveLength(1);
    const turn = await mesh.api.store.turns.byTask(mesh.project.id, taskId);
    expect(turn?.status).toBe('canceled');
    const again = await api('POST', `/tasks/${taskId}/cancel`, {});
    expect(again.status).toBe(409);
    expect(again.body).toMatchObject({
      error: { code: 'conflict', details: { status: 'canceled' } },
    });
  });

  it('toolmesh task cancel does the same from the command line', async () => {
    const { taskId, toolCallId } = await sleepingTask('cancel-cli');
    const { code, stdout, stderr } = await runToolmesh(['task', 'cancel', taskId, '--json'], {
      TOOLMESH_API_URL: apiUrl,
      TOOLMESH_API_KEY: mesh.project.key,
      TOOLMESH_PROJECT: mesh.project.id,
    });
    expect(code, stderr).toBe(0);
    expect(JSON.parse(stdout)).toMatchObject({ task_id: taskId, status: 'canceled' });
    await expectCanceledCall(toolCallId);
    expect((await api('GET', `/tasks/${taskId}`)).body).toMatchObject({ status: 'canceled' });
  });

  it('a task that already ended cannot be canceled; an unknown task is 404', async () => {
    const agent = await mesh.createAgent({
      id: 'cancel-done',
      script: [{ toolCalls: [{ name: 'submit_result', arguments: { result: 'ok' } }] }],
    });
    const taskId = await mesh.startTask(agent, 'finish at once');
    await mesh.finished(taskId);
    const res = await api('POST', `/tasks/${taskId}/cancel`, {});
    expect(res.status).toBe(409);
    expect((await api('GET', `/tasks/${taskId}`)).body).toMatchObject({ status: 'succeeded' });
    const unknown = await api('POST', `/tasks/0190b6a2-0000-7000-8000-000000000000/cancel`, {});
    expect(unknown.status).toBe(404);
  });
});
