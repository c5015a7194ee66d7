// A service stops cleanly on SIGTERM, finishing the calls it has in flight, and rides out a
// NATS restart: the connection comes back and calls flow again.
import { once } from 'node:events';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTestNatsServer, type TestNatsServer } from '@toolmesh/testing';
import { startMesh, type Mesh } from './support/mesh.ts';

const scope = { project: 'proj-life', channel: 'main' };

let nats: TestNatsServer;
let mesh: Mesh;
beforeAll(async () => {
  // A NATS server of this file's own, so stopping it disturbs no other test.
  nats = await startTestNatsServer();
  mesh = await startMesh({ CG__NATS__RECONNECT_WAIT_MS: '200' }, { natsServer: nats });
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await nats?.close();
});

it(
  'SIGTERM lets calls in flight finish, then the process exits 0',
  { timeout: 60_000 },
  async () => {
    const child = await mesh.spawnService();
    const pending = mesh.client.callTool({
      ...scope,
      tool: 'builtin.sleep',
      arguments: { ms: 1_500 },
    });
    const toolCallIdKnown = async () => {
      for (let i = 0; i < 200; i++) {
        const running = await mesh.store.executions.running(scope.project);
        if (running.length > 0) return;
        await new Promise((r) => setTimeout(r, 20));
      }
      throw new Error('the call never started');
    };
    await toolCallIdKnown();
    child.kill('SIGTERM');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(0);
    const result = await pending;
    expect(result.status).toBe('succeeded');
    expect(result.content.result).toMatchObject({ slept_ms: expect.any(Number) as number });
  },
);

it('calls flow again after NATS restarts', { timeout: 60_000 }, async () => {
  await mesh.startService();
  const before = await mesh.client.callTool({
    ...scope,
    tool: 'builtin.echo',
    arguments: { n: 1 },
  });
  expect(before.status).toBe('succeeded');
  await nats.stop();
  await new Promise((r) => setTimeout(r, 500));
  await nats.start();
  // The client reconnects too; give both a moment, then expect the mesh to answer.
  let after;
  for (let attempt = 0; attempt < 20 && !after; attempt++) {
    after = await mesh.client
      .callTool({ ...scope, tool: 'builtin.echo', arguments: { n: 2 } }, { waitMs: 3_000 })
      .catch(() => undefined);
  }
  expect(after?.status).toBe('succeeded');
  expect(after?.content.result).toEqual({ n: 2 });
});
