// A worker killed mid-turn loses nothing: the turn lives in Postgres, its step lease lapses, and
// another instance rebuilds the same conversation and finishes the turn.
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh({ CG__AGENT__LEASE_TTL_MS: '1500' });
  await mesh.startSkills();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

it('a second instance finishes the turn of a worker killed while the model was thinking', async () => {
  const agent = await mesh.createAgent({
    id: 'survivor',
    allowedTools: ['builtin.echo'],
    script: [
      { toolCalls: [{ name: 'builtin__echo', arguments: { before: 'the crash' } }] },
      // The first instance dies while waiting for this answer.
      { delayMs: 60_000, text: 'never delivered' },
      { toolCalls: [{ name: 'submit_result', arguments: { result: 'finished by another' } }] },
    ],
  });
  const first = await mesh.spawnWorker({ CG__SERVICE__INSTANCE_ID: 'first' });
  const taskId = await mesh.startTask(agent, 'survive a crash');
  await until(() => Promise.resolve(mesh.requestsOf(agent).length === 2 ? true : undefined));
  const turn = await mesh.api.store.turns.byTask(mesh.project.id, taskId);
  expect(turn).toMatchObject({ status: 'running', run_owner: 'first', step: 1 });
  first.kill('SIGKILL');
  await once(first, 'exit');

  await mesh.startWorker({ CG__SERVICE__INSTANCE_ID: 'second' });
  const task = await mesh.finished(taskId);
  expect(task.status).toBe('succeeded');
  expect(task.final_card?.content).toMatchObject({ result: 'finished by another' });

  const requests = mesh.requestsOf(agent);
  expect(requests).toHaveLength(3);
  // The same conversation, rebuilt from Postgres by the second instance.
  expect(requests[2]!.body.messages).toEqual(requests[1]!.body.messages);
  const tool = requests[2]!.body.messages.find((m) => m.role === 'tool');
  expect(JSON.parse(String(tool?.content))).toMatchObject({
    status: 'succeeded',
    result: { before: 'the crash' },
  });
  const done = await mesh.api.store.turns.byTask(mesh.project.id, taskId);
  expect(done).toMatchObject({ status: 'succeeded', step: 1 });
  const finals = (await mesh.cards()).filter(
    (c) => c.kind === 'final' && c.metadata['task_id'] === taskId,
  );
  expect(finals).toHaveLength(1);
  expect(finals[0]!.author).toBe(`agent:${agent}`);
});
