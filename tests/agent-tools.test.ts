// The agent loop's handling of tools, through the api, the worker and the scripted model: a
// submit_result given beside other calls runs them first and records their results before the
// final card; an attached tool's config reaches the tool over the model's values; an agent
// with more tools than the prompt shows finds the rest through list_available_tools.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  // Two tools in full per request: the discovery test has three.
  mesh = await startAgentMesh({ CG__AGENT__PROMPT_TOOLS_MAX: '2' });
  await mesh.startSkills();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const submit = (result: unknown) => ({
  toolCalls: [{ name: 'submit_result', arguments: { result } }],
});
const api = (method: 'GET' | 'POST' | 'PATCH', url: string, body?: unknown) =>
  mesh.api.request(method, `/v1/projects/${mesh.project.id}${url}`, {
    key: mesh.project.key,
    body,
  });

describe('agent tools', () => {
  it('submit_result beside other calls: they run, their results are recorded, then the final card', async () => {
    const agent = await mesh.createAgent({
      id: 'beside',
      allowedTools: ['builtin.echo'],
      script: [
        {
          text: 'Recording both, and done.',
          toolCalls: [
            { name: 'builtin__echo', arguments: { n: 1 } },
            { name: 'submit_result', arguments: { result: 'done' } },
            { name: 'builtin__echo', arguments: { n: 2 } },
          ],
        },
      ],
    });
    const taskId = await mesh.startTask(agent, 'record two numbers and finish');
    const task = await mesh.finished(taskId);
    expect(task.status, JSON.stringify(task)).toBe('succeeded');
    // The model was asked once: the submitted answer ends the task after the calls.
    expect(mesh.requestsOf(agent)).toHaveLength(1);
    const final = task.final_card!.content as {
      result: unknown;
      calls: { tool_call_id: string; tool_name: string; status: string; card_id: string }[];
    };
    expect(final.result).toBe('done');
    expect(final.calls.map((c) => [c.tool_name, c.status])).toEqual([
      ['builtin.echo', 'succeeded'],
      ['builtin.echo', 'succeeded'],
    ]);
    const cards = await mesh.cards();
    const finalAt = cards.findIndex((c) => c.card_id === task.final_card!.card_id);
    for (const [i, call] of final.calls.entries()) {
      const at = cards.findIndex((c) => c.card_id === call.card_id);
      expect(at, call.tool_call_id).toBeGreaterThan(-1);
      expect(at).toBeLessThan(finalAt);
      expect(cards[at]!.kind).toBe('tool.result');
      expect((cards[at]!.content as { result: unknown }).result).toEqual({ n: i + 1 });
    }
  });

  it("an attached tool's config reaches the tool and wins over the model's arguments", async () => {
    const agent = await mesh.createAgent({
      id: 'configured',
      allowedTools: ['builtin.*'],
      script: [
        { toolCalls: [{ name: 'builtin__echo', arguments: { region: 'us', n: 7 } }] },
        submit('echoed'),
      ],
    });
    const attached = await api('POST', `/agents/${agent}/tools`, {
      tool: 'builtin.echo',
      config: { region: 'eu', tenant: 'acme' },
    });
    expect(attached.status, attached.raw).toBe(201);
    const taskId = await mesh.startTask(agent, 'echo something');
    const task = await mesh.finished(taskId);
    expect(task.status, JSON.stringify(task)).toBe('succeeded');

    const [first, second] = mesh.requestsOf(agent);
    // Only the attached tool is offered, and the keys the config fixes are not asked for.
    const echo = first!.body.tools!.find((t) => t.function.name === 'builtin__echo');
    expect(first!.body.tools!.map((t) => t.function.name)).toEqual([
      'builtin__echo',
      'submit_result',
    ]);
    const props = (echo!.function.parameters as { properties?: Record<string, unknown> })
      .properties;
    expect(Object.keys(props ?? {})).not.toContain('region');
    // The tool got the config's values over the model's, plus the model's other keys.
    const tool = second!.body.messages.find((m) => m.role === 'tool');
    const seen = JSON.parse(String(tool!.content)) as { status: string; result: unknown };
    expect(seen).toMatchObject({
      status: 'succeeded',
      result: { region: 'eu', tenant: 'acme', n: 7 },
    });
    const call = (await mesh.cards()).find(
      (c) => c.kind === 'tool.call' && c.tool_call_id === tool!.tool_call_id,
    );
    expect((call!.content as { arguments: unknown }).arguments).toEqual({
      region: 'eu',
      tenant: 'acme',
      n: 7,
    });
  });

  it('an agent with more tools than the prompt shows finds and calls the rest through list_available_tools', async () => {
    for (const name of ['aaa.one', 'aaa.two']) {
      const res = await api('POST', '/tools', {
        name,
        description: `served by nobody (${name})`,
        parameters: { type: 'object' },
      });
      expect(res.status, res.raw).toBe(201);
    }
    const agent = await mesh.createAgent({
      id: 'finder',
      allowedTools: ['aaa.*', 'builtin.echo'],
      script: [
        { toolCalls: [{ name: 'list_available_tools', arguments: { query: 'echo' } }] },
        { toolCalls: [{ name: 'builtin__echo', arguments: { found: true } }] },
        submit('found it'),
      ],
    });
    const taskId = await mesh.startTask(agent, 'find the echo tool and use it');
    const task = await mesh.finished(taskId);
    expect(task.status, JSON.stringify(task)).toBe('succeeded');

    const [first, second, third] = mesh.requestsOf(agent);
    expect(first!.body.tools!.map((t) => t.function.name)).toEqual([
      'aaa__one',
      'aaa__two',
      'list_available_tools',
      'submit_result',
    ]);
    const listed = JSON.parse(
      String(second!.body.messages.find((m) => m.role === 'tool')!.content),
    ) as { status: string; result: { tools: { name: string; description: string }[] } };
    expect(listed.status).toBe('succeeded');
    expect(listed.result.tools.map((t) => t.name)).toEqual(['builtin__echo']);
    expect(listed.result.tools[0]!.description).toContain('arguments');
    // The tool it found was not in the prompt, yet its call ran.
    const echoed = JSON.parse(
      String(third!.body.messages.filter((m) => m.role === 'tool').at(-1)!.content),
    ) as { status: string; result: unknown };
    expect(echoed).toMatchObject({ status: 'succeeded', result: { found: true } });
  });
});
