// skills.run_service on the e2b provider (the real SDK against the fake E2B server): exposed
// ports are served on the provider's own hosts, so the endpoints are its https hosts per port,
// returned once the port answers inside the sandbox; task_cancel ends the service.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '@toolmesh/testing';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { PROVIDER_SETUPS } from './support/sandbox-providers.ts';

const e2b = PROVIDER_SETUPS.find((s) => s.name === 'e2b')!;
let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh(await e2b.env());
  await mesh.startSkills();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await e2b.close();
});

const call = (tool: string, args: Record<string, unknown>) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: `skills.${tool}`,
    arguments: args,
    timeoutMs: 60_000,
  });

it('returns the provider host of each exposed port once it answers; cancel ends it', async () => {
  // The fake runs commands on this host: a port nothing else holds.
  const port = await freePort();
  const r = await call('run_service', {
    command: `exec python3 -m http.server ${port} --bind 127.0.0.1`,
    session_id: 'svc',
    expose_ports: [port],
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const res = r.content.result as {
    task_id: string;
    endpoints: { port: number; host: string; url: string }[];
  };
  expect(res.endpoints).toHaveLength(1);
  expect(res.endpoints[0]).toMatchObject({ port });
  expect(res.endpoints[0]!.host).toMatch(new RegExp(`^${port}-[^.]+\\.sandbox\\.test$`));
  expect(res.endpoints[0]!.url).toBe(`https://${res.endpoints[0]!.host}`);
  // It does answer (through the fake, which runs it on this host).
  expect((await fetch(`http://127.0.0.1:${port}/`)).status).toBe(200);

  const st = await call('task_status', { task_id: res.task_id });
  expect(st.content.result).toMatchObject({
    status: 'running',
    endpoints: [expect.objectContaining({ port, active: true })],
  });
  const c = await call('task_cancel', { task_id: res.task_id });
  expect(c.content.result).toMatchObject({ status: 'canceled' });
  const after = await call('task_status', { task_id: res.task_id });
  expect(after.content.result).toMatchObject({
    endpoints: [expect.objectContaining({ port, active: false })],
  });
}, 90_000);

it('fails the call when the port never answers inside the sandbox', async () => {
  const port = await freePort();
  const r = await call('run_service', {
    command: 'sleep 30',
    session_id: 'deaf',
    expose_ports: [port],
    ready_timeout_ms: 1_500,
  });
  expect(r.status).toBe('failed');
  expect(r.content.error).toMatchObject({ details: { reason: 'ports_not_ready', ports: [port] } });
}, 60_000);
