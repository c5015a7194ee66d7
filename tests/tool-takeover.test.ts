// What a takeover does to a tool's effects. A tools service SIGKILLed while its handler waits on
// the upstream leaves the call's lease to expire; the instance that takes it over runs an
// idempotent tool again, but files a non-idempotent one (an http POST) `interrupted` without
// calling the upstream a second time, unless the call opted in with rerun_on_takeover.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '@toolmesh/client';
import { REPO_ROOT } from './support/mesh.ts';
import { spawnReady } from './support/procs.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';

let api: TestApi;
let client: Client;
let up: Upstream;
let project: { id: string; key: string };
const children: ChildProcess[] = [];

beforeAll(async () => {
  // A short lease and ack wait, so the killed instance's call comes back within seconds.
  api = await startTestApi({
    CG__TOOLS__LEASE_TTL_MS: '3000',
    CG__TOOLS__ACK_WAIT_MS: '2000',
    CG__TOOLS__HEALTH_PORT: '0',
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
  });
  client = createClient({ nc: api.nc, root: api.config.nats.subject_root });
  up = await startUpstream();
  project = await api.createProject();
  for (const [name, method, options] of [
    ['up.post_hang', 'POST', {}],
    ['up.get_hang', 'GET', {}],
    ['up.declared_hang', 'GET', { idempotent: false }],
  ] as const) {
    const res = await api.request('POST', `/v1/projects/${project.id}/tools`, {
      key: project.key,
      body: {
        name,
        description: 'waits on an upstream that never answers',
        parameters: { type: 'object', properties: { n: { type: 'integer' } } },
        kind: 'http',
        http: { method, url: `${up.url}/hang` },
        options: { timeout_ms: 8_000, ...options },
      },
    });
    expect(res.status, res.raw).toBe(201);
  }
}, 60_000);
afterAll(async () => {
  for (const c of children) if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
  await client?.close();
  await api?.close();
  await up?.close();
});

const spawnTools = async () => {
  const child = await spawnReady(
    join(REPO_ROOT, 'services/tools/src/main.ts'),
    api.serviceEnv('tools', { CG__LOG__LEVEL: 'info' }),
    'tools service started',
    'tools service',
  );
  children.push(child);
  return child;
};

/** Calls `tool`, kills the instance once the upstream got the request, starts another. */
async function callThroughACrash(tool: string, n: number, rerunOnTakeover?: boolean) {
  const first = await spawnTools();
  const before = up.hits('/hang');
  const result = client.callTool(
    {
      project: project.id,
      channel: 'main',
      tool,
      arguments: { n },
      ...(rerunOnTakeover !== undefined ? { rerunOnTakeover } : {}),
    },
    { waitMs: 60_000 },
  );
  await up.hanging(before + 1);
  first.kill('SIGKILL');
  await once(first, 'exit');
  const second = await spawnTools();
  const r = await result;
  second.kill('SIGTERM');
  await once(second, 'exit');
  const { rows } = await api.store.pool.query<{ n: string }>(
    `SELECT count(*) AS n FROM cards WHERE project_id = $1 AND tool_call_id = $2 AND kind = 'tool.result'`,
    [project.id, r.tool_call_id],
  );
  return { r, runs: up.hits('/hang') - before, cards: Number(rows[0]!.n) };
}

describe('takeover of a call whose instance died mid-run', () => {
  it(
    'a non-idempotent tool (http POST) is filed interrupted and not run again',
    { timeout: 180_000 },
    async () => {
      const { r, runs, cards } = await callThroughACrash('up.post_hang', 1);
      expect(r.status).toBe('failed');
      expect(r.content.error).toMatchObject({
        code: 'interrupted',
        message: expect.stringContaining('rerun_on_takeover') as string,
      });
      expect(runs).toBe(1);
      expect(cards).toBe(1);
    },
  );

  it(
    'a tool whose options say idempotent: false is filed interrupted too, whatever its method',
    { timeout: 180_000 },
    async () => {
      const { r, runs } = await callThroughACrash('up.declared_hang', 2);
      expect(r.content.error?.code).toBe('interrupted');
      expect(runs).toBe(1);
    },
  );

  it(
    'with rerun_on_takeover the call runs again, and still ends with one card',
    { timeout: 180_000 },
    async () => {
      const { r, runs, cards } = await callThroughACrash('up.post_hang', 3, true);
      // The upstream never answers, so the second run ends at the tool's deadline.
      expect(r.status).toBe('timeout');
      expect(runs).toBe(2);
      expect(cards).toBe(1);
    },
  );

  it(
    'an idempotent tool (http GET) runs again after a takeover',
    { timeout: 180_000 },
    async () => {
      const { r, runs, cards } = await callThroughACrash('up.get_hang', 4);
      expect(r.status).toBe('timeout');
      expect(runs).toBe(2);
      expect(cards).toBe(1);
    },
  );
});

it('the registry shows which seeded tools are idempotent', async () => {
  const options = async (name: string) => {
    const res = await api.request('GET', `/v1/projects/${project.id}/tools/${name}`, {
      key: project.key,
    });
    expect(res.status, res.raw).toBe(200);
    return (res.body as { options: Record<string, unknown> }).options;
  };
  for (const name of [
    'skills.run_cmd',
    'skills.run_cmd_async',
    'skills.run_service',
    'skills.start_job',
  ])
    expect(await options(name), name).toMatchObject({ idempotent: false });
  for (const name of ['skills.load', 'skills.task_status', 'builtin.echo', 'builtin.sleep'])
    expect(await options(name), name).toMatchObject({ idempotent: true });
});
