// skills.run_service through the whole mesh: the example HTTP skill started in a session
// sandbox with port 8000 exposed answers through its 127.0.0.1 endpoint, given the endpoint's
// bearer token (tests/redteam/ports.test.ts has the refusals); task_status says the
// endpoint is active; task_cancel ends it, after which the host port refuses connections and
// neither the forwarder nor the server is left in /proc. A service that never listens, or exits
// first, fails the call and leaves nothing running.
import { createConnection } from 'node:net';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith, until } from './support/procs.ts';

let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-svc' });
  await mesh.uploadSkill(join(import.meta.dirname, '..', 'examples/skills/http-hello'));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const call = (tool: string, args: Record<string, unknown>, timeoutMs = 60_000) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: `skills.${tool}`,
    arguments: args,
    timeoutMs,
  });

const connects = (port: number) =>
  new Promise<boolean>((resolve) => {
    const s = createConnection({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });

interface Endpoint {
  port: number;
  host: string;
  host_port: number;
  url: string;
  token?: string;
  active?: boolean;
}

describe('skills.run_service', () => {
  it('exposes a port on 127.0.0.1, reports it active, and cancel leaves nothing behind', async () => {
    // A greeting no other test uses, so the process check finds only this server.
    const greeting = `hey${Date.now()}`;
    const r = await call('run_service', {
      skill: 'http-hello',
      command: `python3 server.py --port 8000 --greeting ${greeting}`,
      session_id: 's',
      expose_ports: [8000],
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const res = r.content.result as { task_id: string; status: string; endpoints: Endpoint[] };
    expect(res.status).toBe('running');
    expect(res.endpoints).toHaveLength(1);
    const ep = res.endpoints[0]!;
    expect(ep).toMatchObject({ port: 8000, host: '127.0.0.1' });
    expect(ep.url).toBe(`http://127.0.0.1:${ep.host_port}`);
    expect(ep.token).toMatch(/^[\w-]{43}$/);

    const got = await fetch(`${ep.url}/x`, { headers: { authorization: `Bearer ${ep.token}` } });
    expect(got.status).toBe(200);
    expect(await got.json()).toMatchObject({ greeting, path: '/x' });

    const st = await call('task_status', { task_id: res.task_id });
    expect(st.status, JSON.stringify(st.content)).toBe('succeeded');
    const view = st.content.result as { status: string; endpoints: Endpoint[] };
    expect(view.status).toBe('running');
    // The token was shown once: task_status (and the task head) never carry it.
    const { token: _token, ...shown } = ep;
    expect(view.endpoints).toEqual([{ ...shown, active: true }]);
    expect(await processesWith(greeting)).not.toHaveLength(0);
    // The forwarder's own socket, as the task head records it: a host port can be reused.
    const stored = await mesh.api.store.skillTasks.get(mesh.project.id, res.task_id);
    const socket = (stored?.endpoints[0] as { forwarder_socket: string }).forwarder_socket;
    const forwarderMarker = `UNIX-LISTEN:${socket},`;
    expect(await processesWith(forwarderMarker)).not.toHaveLength(0);

    const c = await call('task_cancel', { task_id: res.task_id });
    expect(c.status, JSON.stringify(c.content)).toBe('succeeded');
    expect(c.content.result).toMatchObject({ status: 'canceled', canceled: true });
    expect(await connects(ep.host_port)).toBe(false);
    await until(async () =>
      (await processesWith(greeting)).length === 0 &&
      (await processesWith(forwarderMarker)).length === 0
        ? true
        : undefined,
    );
    const after = await call('task_status', { task_id: res.task_id });
    expect((after.content.result as { endpoints: Endpoint[] }).endpoints).toEqual([
      { ...shown, active: false },
    ]);
  }, 90_000);

  it('a service that never listens on its port fails the call and is not left running', async () => {
    const greeting = `deaf${Date.now()}`;
    const r = await call('run_service', {
      skill: 'http-hello',
      command: `python3 server.py --port 8001 --greeting ${greeting}`,
      session_id: 's-deaf',
      expose_ports: [8000],
      ready_timeout_ms: 2_000,
    });
    expect(r.status).toBe('failed');
    const details = r.content.error?.details as { reason: string; task_id: string };
    expect(details).toMatchObject({ reason: 'ports_not_ready', ports: [8000] });
    const head = await mesh.api.store.skillTasks.get(mesh.project.id, details.task_id);
    expect(head?.status).not.toBe('running');
    await until(async () => ((await processesWith(greeting)).length === 0 ? true : undefined));
  }, 60_000);

  it('a service that exits before its port answers fails the call with its reason', async () => {
    const r = await call('run_service', {
      command: 'echo starting; exit 3',
      session_id: 's-quit',
      expose_ports: [8000],
    });
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({ details: { reason: 'service_ended' } });
  }, 60_000);
});
