// The mesh end to end: calls published by the client reach the builtin tools through JetStream,
// and each ends with exactly one result card and one result event.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startMesh, type Mesh } from './support/mesh.ts';

let mesh: Mesh;
beforeAll(async () => {
  mesh = await startMesh();
  await mesh.startService();
});
afterAll(async () => {
  await mesh?.close();
});

const scope = { project: 'proj-a', channel: 'main' };

describe('a tool call crosses the mesh', () => {
  it('builtin.echo returns its arguments in a result card', async () => {
    const result = await mesh.client.callTool({
      ...scope,
      tool: 'builtin.echo',
      arguments: { hello: 'world', n: 3 },
    });
    expect(result.status).toBe('succeeded');
    expect(result.content.result).toEqual({ hello: 'world', n: 3 });
    const card = await mesh.store.cards.toolResult(scope.project, result.tool_call_id);
    expect(card?.card_id).toBe(result.card_id);
    expect(card?.kind).toBe('tool.result');
    expect(card?.content).toMatchObject({ status: 'succeeded', result: { hello: 'world', n: 3 } });
    const exec = await mesh.store.executions.get(scope.project, result.tool_call_id);
    expect(exec).toMatchObject({
      status: 'succeeded',
      tool_name: 'builtin.echo',
      card_id: result.card_id,
    });
  });

  it('the same tool call id sent again gets the same card and writes nothing new', async () => {
    const first = await mesh.client.callTool({
      ...scope,
      tool: 'builtin.echo',
      arguments: { x: 1 },
    });
    const again = await mesh.client.callTool(
      { ...scope, tool: 'builtin.echo', toolCallId: first.tool_call_id, arguments: { x: 1 } },
      { waitMs: 5_000 },
    );
    expect(again.card_id).toBe(first.card_id);
    expect(await mesh.store.cards.countToolResults(scope.project, first.tool_call_id)).toBe(1);
  });
});
