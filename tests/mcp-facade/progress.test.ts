// Progress over the facade: a request with a progress token gets notifications/progress from
// the call's progress events on the mesh (here an MCP tool of the project, whose upstream server
// reports three steps); a request without one gets none.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { addMcpFixture, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: Awaited<ReturnType<typeof addMcpFixture>>;
beforeAll(async () => {
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  fixture = await addMcpFixture(mesh);
});
afterAll(async () => {
  await fixture?.stop();
  await mesh?.close();
});

describe('progress', () => {
  it("sends the call's progress events as notifications/progress", async () => {
    const client = await mesh.connect();
    const seen: { progress: number; message?: string | undefined }[] = [];
    const res = await client.callTool(
      { name: 'web__progress', arguments: { steps: 3 } },
      undefined,
      {
        onprogress: (p) => void seen.push({ progress: p.progress, message: p.message }),
      },
    );
    expect(res.isError).toBeFalsy();
    // Core NATS progress events may trail the result by a moment; the three arrive in order.
    await expect.poll(() => seen.length).toBe(3);
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, message: `step ${i}` })));
  });

  it("a task's progress events reach the session after the task was returned (2025-11-25)", async () => {
    const client = await mesh.connect();
    const seen: { progress: number; message?: string | undefined }[] = [];
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'web__progress', arguments: { steps: 3 }, task: { ttl: 60_000 } },
      },
      CreateTaskResultSchema,
      { onprogress: (p) => void seen.push({ progress: p.progress, message: p.message }) },
    );
    expect(task.status).toBe('working');
    // The request was answered with the task; the progress comes on the session's stream.
    await expect.poll(() => seen.length, { timeout: 10_000 }).toBe(3);
    expect(seen).toEqual([1, 2, 3].map((i) => ({ progress: i, message: `step ${i}` })));
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
  });
});
