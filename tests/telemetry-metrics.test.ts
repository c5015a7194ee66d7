// GET /metrics of each of the five processes, each a real child process as `pnpm stack` runs
// them: every one lists the mesh's families, and after an agent task (the model calls
// builtin.echo), a skill run in the sandbox and a registry HTTP tool, the counters of the
// process that did the work have moved. A scrape names tools and statuses, never a project,
// an argument or a result.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { freePort } from '@toolmesh/testing';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { spawnReady, until } from './support/procs.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

const FAMILIES = [
  'toolmesh_tool_calls_total',
  'toolmesh_tool_call_duration_seconds',
  'toolmesh_lease_takeovers_total',
  'toolmesh_redeliveries_total',
  'toolmesh_sandboxes_created_total',
  'toolmesh_sandboxes_active',
  'toolmesh_sandbox_exec_duration_seconds',
  'toolmesh_reaper_passes_total',
  'toolmesh_reaper_sandboxes_reaped_total',
  'toolmesh_agent_steps_total',
  'toolmesh_model_request_duration_seconds',
  'toolmesh_model_tokens_total',
  'process_cpu_seconds_total',
];

let mesh: AgentMesh;
let up: Upstream;
const children: ChildProcess[] = [];
const ports = { api: 0, skills: 0, tools: 0, agent: 0, reaper: 0 };

beforeAll(async () => {
  mesh = await startAgentMesh({ CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]' });
  up = await startUpstream();
  for (const k of Object.keys(ports) as (keyof typeof ports)[]) ports[k] = await freePort();
  const env = { ...mesh.api.env, CG__LOG__LEVEL: 'info' };
  const main = (service: string) => join(REPO_ROOT, `services/${service}/src/main.ts`);
  children.push(
    await spawnReady(
      main('api'),
      { ...env, CG__API__PORT: String(ports.api) },
      'api listening',
      'api',
    ),
    await mesh.spawnSkills({ CG__SKILLS__HEALTH_PORT: String(ports.skills) }),
    await spawnReady(
      main('tools'),
      mesh.api.serviceEnv('tools', {
        CG__LOG__LEVEL: 'info',
        CG__TOOLS__HEALTH_PORT: String(ports.tools),
      }),
      'tools service started',
      'tools',
    ),
    await mesh.spawnWorker({ CG__AGENT__HEALTH_PORT: String(ports.agent) }),
    await spawnReady(
      main('sandbox-reaper'),
      mesh.api.serviceEnv('sandbox-reaper', {
        CG__LOG__LEVEL: 'info',
        CG__REAPER__HEALTH_PORT: String(ports.reaper),
        CG__REAPER__INTERVAL_MS: '200',
      }),
      'sandbox reaper started',
      'sandbox-reaper',
    ),
  );
  await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
}, 120_000);

afterAll(async () => {
  for (const c of children) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await once(c, 'exit');
    }
  }
  await mesh?.close();
  await up?.close();
});

async function scrape(port: number): Promise<string> {
  const res = await fetch(`http://127.0.0.1:${port}/metrics`);
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/plain/);
  return res.text();
}

/** The value of one sample, by name and the labels it must carry; undefined when absent. */
function sample(
  text: string,
  name: string,
  labels: Record<string, string> = {},
): number | undefined {
  for (const line of text.split('\n')) {
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$/.exec(line);
    if (!m || m[1] !== name) continue;
    const have = Object.fromEntries(
      [...(m[3] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((l) => [l[1], l[2]]),
    );
    if (Object.entries(labels).every(([k, v]) => have[k] === v)) return Number(m[4]);
  }
  return undefined;
}

const api = async (method: string, path: string, body?: unknown) => {
  const res = await fetch(`http://127.0.0.1:${ports.api}/v1/projects/${mesh.project.id}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${mesh.project.key}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: res.status, body: (await res.json()) as any };
};

it('each of the five processes serves the mesh families, and the counters of its work move', async () => {
  for (const [name, port] of Object.entries(ports)) {
    const text = await scrape(port);
    for (const family of FAMILIES)
      expect(text, `${name} lists ${family}`).toContain(`# TYPE ${family} `);
  }

  // An agent task whose model calls builtin.echo, through the api process.
  const agent = await mesh.createAgent({
    id: 'metered',
    allowedTools: ['builtin.*'],
    script: [
      { toolCalls: [{ name: 'builtin__echo', arguments: { secret_word: 'swordfish' } }] },
      { toolCalls: [{ name: 'submit_result', arguments: { result: 'echoed' } }] },
    ],
  });
  const started = await api('POST', `/agents/${agent}/tasks`, { input: 'echo', channel: 'main' });
  expect(started.status, JSON.stringify(started.body)).toBe(202);
  const task = await mesh.finished(started.body.task_id, 60_000);
  expect(task.status).toBe('succeeded');

  // A skill run in the sandbox (skills process) and a registry HTTP tool (tools process).
  const scope = { project: mesh.project.id, channel: 'main' };
  const run = await mesh.client.callTool({
    ...scope,
    tool: 'skills.run_cmd',
    arguments: { skill: 'draw-image', command: 'echo metered' },
  });
  expect(run.status, JSON.stringify(run)).toBe('succeeded');
  const tool = await api('POST', '/tools', {
    name: 'shop.ping',
    description: 'pings the shop',
    parameters: { type: 'object', properties: {}, additionalProperties: false },
    kind: 'http',
    http: { method: 'GET', url: `${up.url}/echo/ping` },
  });
  expect(tool.status, JSON.stringify(tool.body)).toBe(201);
  const ping = await until(async () => {
    const r = await mesh.client.callTool({ ...scope, tool: 'shop.ping' });
    return r.status === 'succeeded' ? r : undefined;
  }, 20_000);
  expect(ping.status).toBe('succeeded');

  const apiText = await scrape(ports.api);
  expect(
    sample(apiText, 'toolmesh_api_requests_total', {
      method: 'POST',
      route: '/v1/projects/:project/agents/:agent/tasks',
      status: '202',
    }),
  ).toBe(1);

  const skills = await scrape(ports.skills);
  const echo = { tool: 'builtin.echo', status: 'succeeded' };
  expect(sample(skills, 'toolmesh_tool_calls_total', echo)).toBe(1);
  expect(sample(skills, 'toolmesh_tool_call_duration_seconds_count', echo)).toBe(1);
  const runCmd = { tool: 'skills.run_cmd', status: 'succeeded' };
  expect(sample(skills, 'toolmesh_tool_calls_total', runCmd)).toBe(1);
  expect(sample(skills, 'toolmesh_sandboxes_created_total', { provider: 'local' })).toBe(1);
  expect(sample(skills, 'toolmesh_sandboxes_active', { provider: 'local' })).toBeGreaterThanOrEqual(
    0,
  );
  expect(
    sample(skills, 'toolmesh_sandbox_exec_duration_seconds_count', {
      provider: 'local',
      outcome: 'ok',
    }),
  ).toBeGreaterThanOrEqual(1);
  expect(
    sample(skills, 'toolmesh_reaper_passes_total', { reaper: 'skills', outcome: 'ok' }),
  ).toBeGreaterThanOrEqual(1);

  const tools = await scrape(ports.tools);
  expect(
    sample(tools, 'toolmesh_tool_calls_total', { tool: 'shop.ping', status: 'succeeded' }),
  ).toBe(1);
  expect(sample(tools, 'toolmesh_tool_calls_total', echo)).toBeUndefined();

  const worker = await scrape(ports.agent);
  expect(sample(worker, 'toolmesh_agent_steps_total', { outcome: 'ok' })).toBe(2);
  expect(sample(worker, 'toolmesh_model_request_duration_seconds_count', { outcome: 'ok' })).toBe(
    2,
  );
  expect(sample(worker, 'toolmesh_model_tokens_total', { kind: 'input' })).toBeGreaterThan(0);
  expect(sample(worker, 'toolmesh_model_tokens_total', { kind: 'output' })).toBeGreaterThan(0);

  const reaper = await until(async () => {
    const text = await scrape(ports.reaper);
    const passes = sample(text, 'toolmesh_reaper_passes_total', {
      reaper: 'sandbox-reaper',
      outcome: 'ok',
    });
    return passes !== undefined && passes >= 2 ? text : undefined;
  });
  expect(
    sample(reaper, 'toolmesh_reaper_sandboxes_reaped_total', { reaper: 'sandbox-reaper' }),
  ).toBe(0);

  // Operators' numbers, not a project's data: no project id, argument or result in any scrape.
  for (const port of Object.values(ports)) {
    const text = await scrape(port);
    expect(text).not.toContain(mesh.project.id);
    expect(text).not.toContain('swordfish');
    expect(text).not.toContain('metered');
  }
  // Only GET /metrics and GET /healthz answer on a health port.
  const other = await fetch(
    `http://127.0.0.1:${ports.skills}/v1/projects/${mesh.project.id}/tools`,
  );
  expect(other.status).toBe(404);
}, 120_000);
