// Cancel over the facade: a client that cancels its request (notifications/cancelled) cancels the
// call on the mesh: the execution ends `canceled` long before builtin.sleep would have finished.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh();
});
afterAll(async () => mesh?.close());

describe('cancel', () => {
  it('cancels the call on the mesh when the client cancels its request', async () => {
    const client = await mesh.connect();
    const abort = new AbortController();
    const key = `cancel-${Date.now()}`;
    const pending = client.callTool(
      {
        name: 'builtin__sleep',
        arguments: { ms: 60_000 },
        _meta: { 'io.toolmesh/idempotency-key': key },
      },
      undefined,
      { signal: abort.signal },
    );
    // Wait until the call runs on the mesh, then cancel the request.
    const rows = () => mesh.api.store.executions.running(mesh.project.id);
    await expect.poll(async () => (await rows()).length, { timeout: 10_000 }).toBe(1);
    const [running] = await rows();
    abort.abort('changed my mind');
    await expect(pending).rejects.toThrow();
    // `canceled`, not `succeeded`: the sleep was stopped, not waited out. The wait for it is half
    // the sleep, so a cancel that landed only once the sleep ended would not be seen in time.
    await expect
      .poll(
        async () =>
          (await mesh.api.store.executions.get(mesh.project.id, running!.tool_call_id))?.status,
        { timeout: 30_000 },
      )
      .toBe('canceled');
  }, 90_000);
});
