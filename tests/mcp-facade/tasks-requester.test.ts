// The Tasks requester of @modelcontextprotocol/ext-tasks over a 2.x client speaking the 2025-11-25
// revision: its generation-agnostic callTool runs a facade tool as a task (the task id is the
// call's tool_call_id) and settles it from the card. The same requester against 2026-07-28 (the
// io.modelcontextprotocol/tasks extension) is in modern-tasks.test.ts.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
} from '@modelcontextprotocol/ext-tasks/client';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh();
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

async function session() {
  const client = new Client({ name: 'requester-test', version: '1.0.0' });
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  return createTaskSessionFromClient(client, { endpointId: 'toolmesh-test' });
}

describe('the ext-tasks requester (2025-11-25 Tasks)', () => {
  it('runs a tool as a task and settles it from the card', async () => {
    const s = await session();
    try {
      const execution = await s.callTool(
        'builtin__sleep',
        { ms: 300 },
        { task: { preference: 'require' } },
      );
      const { outcome, lastTask } = await execution.settle();
      expect(outcome.status).toBe('completed');
      const result = resultFromTaskOutcome(outcome) as { structuredContent?: unknown };
      expect(result.structuredContent).toMatchObject({ slept_ms: expect.any(Number) });
      const taskId = lastTask?.taskId ?? outcome.task?.taskId;
      expect(taskId).toEqual(expect.any(String));
      expect(await mesh.api.store.mcpTasks.get(mesh.project.id, taskId!)).toBeDefined();
      expect((await mesh.api.store.executions.get(mesh.project.id, taskId!))?.status).toBe(
        'succeeded',
      );
    } finally {
      await s.close();
    }
  });
});
