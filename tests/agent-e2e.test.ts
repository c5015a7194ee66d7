// End to end: the api starts a task; the worker asks the (scripted) model, which sees the skills
// it may use and calls skills.run_cmd on the example image skill; the skills service runs it in
// the sandbox; the result card wakes the worker; the model sees the result and submits it; the
// final card and the task event exist, and the picture downloads through the api.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startSkills();
  await mesh.startWorker();
  await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

interface RunCmdResult {
  exit_code: number;
  stdout: string;
  artifacts: { artifact_id: string; mime: string; size_bytes: number }[];
}

it('a task draws a picture with the image skill and submits it', async () => {
  const agent = await mesh.createAgent({
    id: 'painter',
    allowedTools: ['skills.*'],
    systemPrompt: 'Use your skills to do what the user asks.',
    script: [
      {
        text: 'I will draw it with the draw-image skill.',
        toolCalls: [
          {
            name: 'skills__run_cmd',
            arguments: {
              skill: 'draw-image',
              command: 'python3 draw.py --out out/pic.png --caption hello --width 64 --height 48',
              outputs: ['out/pic.png'],
            },
          },
        ],
      },
      (req) => {
        const tool = req.body.messages.find((m) => m.role === 'tool');
        const seen = JSON.parse(String(tool?.content)) as { result: RunCmdResult };
        return {
          toolCalls: [
            {
              name: 'submit_result',
              arguments: { result: { artifact_id: seen.result.artifacts[0]?.artifact_id } },
            },
          ],
        };
      },
    ],
  });
  const taskId = await mesh.startTask(agent, 'Draw a 64x48 picture that says hello.');
  const task = await mesh.finished(taskId, 90_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');

  // What the model was shown first: its prompt with the skills it may load, and the tools.
  const [first, second] = mesh.requestsOf(agent);
  const system = String(first!.body.messages[0]!.content);
  expect(system).toContain('Use your skills');
  expect(system).toContain('<available_skills>');
  expect(system).toContain('<name>draw-image</name>');
  expect(system).toContain('<location>skills/draw-image</location>');
  expect(first!.body.tools!.map((t) => t.function.name)).toContain('skills__run_cmd');

  // The sandbox ran it, and the model saw the result card's content.
  const tool = second!.body.messages.find((m) => m.role === 'tool');
  const seen = JSON.parse(String(tool?.content)) as { status: string; result: RunCmdResult };
  expect(seen.status).toBe('succeeded');
  expect(seen.result.exit_code).toBe(0);
  expect(JSON.parse(seen.result.stdout)).toMatchObject({ width: 64, height: 48 });
  const card = await mesh.api.store.cards.toolResult(mesh.project.id, tool!.tool_call_id!);
  expect(card?.author).not.toBe(`agent:${agent}`);

  // The final card, the task event, and the artifact through the api.
  const artifactId = (task.final_card!.content as { result: { artifact_id: string } }).result
    .artifact_id;
  expect(task.final_card).toMatchObject({ kind: 'final' });
  await until(() =>
    Promise.resolve(
      mesh.taskEvents().find((e) => e.task_id === taskId && e.status === 'succeeded'),
    ),
  );
  const res = await mesh.api.app.inject({
    method: 'GET',
    url: `/v1/projects/${mesh.project.id}/artifacts/${artifactId}/content`,
    headers: { authorization: `Bearer ${mesh.project.key}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
  expect(res.rawPayload.readUInt32BE(16)).toBe(64);
  expect(res.rawPayload.readUInt32BE(20)).toBe(48);
});
