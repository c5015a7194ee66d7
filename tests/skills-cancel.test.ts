// A running skills.run_cmd is cancelled from outside: the cancel reaches whichever of two
// skills instances runs the command, the call ends `canceled`, and no process of it is left.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith } from './support/procs.ts';

let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-a' });
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-b' });
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

it(
  'cancels a running command on whichever instance runs it; nothing is left',
  { timeout: 60_000 },
  async () => {
    const scope = { project: mesh.project.id, channel: 'main' };
    const marker = `tm-cancel-${Date.now()}`;
    // A duration no other test uses, so the background child can be found by its command line.
    const child = `45.${process.pid}${Date.now() % 1000}`;
    const toolCallId = `cancel-${Date.now()}`;
    const pending = mesh.client.callTool({
      ...scope,
      tool: 'skills.run_cmd',
      toolCallId,
      arguments: { command: `sleep ${child} & sleep 46; # ${marker}`, timeout_ms: 50_000 },
      timeoutMs: 55_000,
    });
    for (let i = 0; i < 200 && (await processesWith(marker)).length === 0; i++) {
      await new Promise((r) => setTimeout(r, 50));
    }
    expect((await processesWith(marker)).length).toBeGreaterThan(0);
    await mesh.client.cancel({ ...scope, toolCallId, reason: 'no longer needed' });
    const r = await pending;
    expect(r.status).toBe('canceled');
    expect(r.content.error?.message).toContain('no longer needed');
    const exec = await mesh.api.store.executions.get(scope.project, toolCallId);
    expect(['skills-a', 'skills-b']).toContain(exec?.instance_id);
    expect(await processesWith(marker)).toEqual([]);
    expect(await processesWith(`sleep ${child}`)).toEqual([]);
  },
);
