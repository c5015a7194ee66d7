// A tool's rate limit is one token bucket shared by every instance of the tools service: 120
// calls at per_minute 60 and burst 10, spread over two instances, let through no more than the
// bucket holds plus what it refilled while they ran (counted from the execution rows); the rest
// fail quickly with rate_limited and say when a token frees up.
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

let mesh: ToolsMesh;
let up: Upstream;
beforeAll(async () => {
  up = await startUpstream();
  const env = {
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__CONCURRENCY: '16',
  };
  mesh = await startToolsMesh({ ...env, CG__SERVICE__INSTANCE_ID: 'tools-one' });
  await mesh.startService({ CG__SERVICE__INSTANCE_ID: 'tools-two' });
});
afterAll(async () => {
  await mesh?.close();
  await up?.close();
});

it('two instances share one bucket: 120 calls at 60/min, burst 10', async () => {
  const p = await mesh.api.createProject();
  const res = await mesh.request('POST', `/v1/projects/${p.id}/tools`, {
    key: p.key,
    body: {
      name: 'limited.echo',
      description: 'an echo behind a rate limit',
      parameters: { type: 'object' },
      kind: 'http',
      http: { method: 'GET', url: `${up.url}/echo/limited` },
      options: { rate_limit: { per_minute: 60, burst: 10, max_wait_ms: 100 } },
    },
  });
  expect(res.status, res.raw).toBe(201);

  const started = Date.now();
  const results = await Promise.all(
    Array.from({ length: 120 }, () =>
      mesh.client.callTool(
        { project: p.id, channel: 'rl', tool: 'limited.echo' },
        { waitMs: 60_000 },
      ),
    ),
  );
  const elapsedSec = (Date.now() - started) / 1000;

  const rows = await mesh.api.store.pool.query<{
    status: string;
    error_code: string | null;
    instance_id: string;
  }>(
    `SELECT status, error_code, instance_id FROM state.tool_executions
     WHERE project_id = $1 AND tool_name = 'limited.echo'`,
    [p.id],
  );
  expect(rows.rows).toHaveLength(120);
  const succeeded = rows.rows.filter((r) => r.status === 'succeeded').length;
  const limited = rows.rows.filter((r) => r.error_code === 'rate_limited').length;
  // The burst, plus one token per second the calls ran.
  expect(succeeded).toBeGreaterThanOrEqual(10);
  expect(succeeded).toBeLessThanOrEqual(10 + Math.ceil(elapsedSec));
  expect(succeeded + limited).toBe(120);
  expect(up.hits('/echo/limited')).toBe(succeeded);
  expect(new Set(rows.rows.map((r) => r.instance_id))).toEqual(new Set(['tools-one', 'tools-two']));

  const refused = results.find((r) => r.content.error?.code === 'rate_limited');
  expect(refused?.status).toBe('failed');
  expect(refused?.content.error?.details).toMatchObject({
    retry_after_ms: expect.any(Number),
    per_minute: 60,
    burst: 10,
  });
  expect(
    (refused?.content.error?.details as { retry_after_ms: number }).retry_after_ms,
  ).toBeGreaterThan(0);
});
