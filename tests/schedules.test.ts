// Schedules through the api: created, checked, paused, resumed and deleted over HTTP; fired by
// the api processes themselves. Two api instances fire a per-second tool schedule for 30 ticks
// while one of them is SIGKILLed midway: every tick fires once (one firing, one call, one card),
// with no tick skipped. An agent schedule starts tasks the worker finishes; missed ticks follow
// the schedule's catch_up rule; another project can neither see nor change a schedule.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startScheduler } from '../services/api/src/schedules/scheduler.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { runToolmesh } from './support/cli.ts';
import { spawnReady, until } from './support/procs.ts';

let mesh: AgentMesh;
let other: { id: string; key: string };
const apis: ChildProcess[] = [];

beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startSkills();
  other = await mesh.api.createProject();
}, 60_000);
afterAll(async () => {
  for (const c of apis) {
    if (c.exitCode === null && c.signalCode === null) {
      c.kill('SIGKILL');
      await once(c, 'exit');
    }
  }
  await mesh?.close();
});

const path = (p = '') => `/v1/projects/${mesh.project.id}/schedules${p}`;
const req = (
  method: 'GET' | 'POST' | 'DELETE',
  url: string,
  body?: unknown,
  key = mesh.project.key,
) => mesh.api.request(method, url, { key, body });

/** An api process of this mesh that fires schedules every 200 ms. */
async function spawnApi(n: number): Promise<ChildProcess> {
  const main = join(import.meta.dirname, '..', 'services/api/src/main.ts');
  const child = await spawnReady(
    main,
    mesh.api.serviceEnv('api', {
      CG__API__PORT: '0',
      CG__LOG__LEVEL: 'info',
      CG__SERVICE__INSTANCE_ID: `sched-${n}`,
      CG__SCHEDULES__POLL_MS: '200',
    }),
    'api listening',
    `api ${n}`,
  );
  apis.push(child);
  return child;
}

describe('routes', () => {
  it('creates, lists, shows, pauses, resumes and deletes a schedule', async () => {
    const made = await req('POST', path(), {
      name: 'nightly',
      cron: '0 3 * * *',
      timezone: 'Europe/Berlin',
      tool: 'builtin.echo',
      arguments: { hello: 'night' },
    });
    expect(made.status).toBe(201);
    expect(made.body).toMatchObject({
      name: 'nightly',
      tool: 'builtin.echo',
      agent: null,
      catch_up: 'skip',
      paused: false,
      last_fire_at: null,
      channel: 'schedules',
    });
    // 03:00 in Berlin is 01:00 or 02:00 UTC, depending on the season.
    const next = new Date(made.body.next_fire_at as string);
    expect(next.getTime()).toBeGreaterThan(Date.now());
    expect([1, 2]).toContain(next.getUTCHours());
    expect(next.getUTCMinutes()).toBe(0);

    const again = await req('POST', path(), {
      name: 'nightly',
      cron: '* * * * *',
      tool: 'builtin.echo',
    });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('conflict');

    const listed = await req('GET', path());
    expect(listed.body.schedules.map((s: { name: string }) => s.name)).toContain('nightly');

    const paused = await req('POST', path('/nightly/pause'));
    expect(paused.body).toMatchObject({ paused: true, next_fire_at: null });
    const resumed = await req('POST', path('/nightly/resume'));
    expect(resumed.body.paused).toBe(false);
    expect(new Date(resumed.body.next_fire_at as string).getTime()).toBe(next.getTime());

    const shown = await req('GET', path('/nightly'));
    expect(shown.body).toMatchObject({ name: 'nightly', firings: [] });
    expect((await req('DELETE', path('/nightly'))).status).toBe(204);
    expect((await req('GET', path('/nightly'))).status).toBe(404);
  });

  it('refuses bad schedules with the field at fault', async () => {
    const bad = async (body: Record<string, unknown>) => {
      const res = await req('POST', path(), { name: 'bad', ...body });
      expect(res.status, JSON.stringify(body)).toBeGreaterThanOrEqual(400);
      expect(res.status, JSON.stringify(body)).toBeLessThan(500);
      return res.body.error as { code: string; message: string; details?: Record<string, unknown> };
    };
    expect(await bad({ cron: 'every day', tool: 'builtin.echo' })).toMatchObject({
      code: 'invalid_schedule',
      details: { field: 'cron' },
    });
    expect(
      await bad({ cron: '* * * * *', timezone: 'Mars/Olympus', tool: 'builtin.echo' }),
    ).toMatchObject({
      code: 'invalid_schedule',
      details: { field: 'timezone' },
    });
    expect((await bad({ cron: '0 0 30 2 *', tool: 'builtin.echo' })).message).toMatch(
      /never fires/,
    );
    expect((await bad({ cron: '* * * * *' })).code).toBe('invalid_schedule');
    expect(
      (await bad({ cron: '* * * * *', tool: 'builtin.echo', agent: 'a', input: 'x' })).code,
    ).toBe('invalid_schedule');
    expect((await bad({ cron: '* * * * *', agent: 'nobody', input: 'x' })).code).toBe('not_found');
    expect((await bad({ cron: '* * * * *', tool: 'builtin.nope' })).code).toBe('not_found');
    expect(
      await bad({ cron: '* * * * *', tool: 'builtin.sleep', arguments: { ms: 'long' } }),
    ).toMatchObject({ code: 'invalid_arguments' });
    expect((await req('GET', path('/bad'))).status).toBe(404); // nothing half-made
  });

  it("another project's key can neither see nor change this project's schedules", async () => {
    await req('POST', path(), { name: 'mine', cron: '0 0 1 1 *', tool: 'builtin.echo' });
    const theirs = other.key;
    for (const [method, url] of [
      ['GET', path()],
      ['GET', path('/mine')],
      ['POST', path('/mine/pause')],
      ['POST', path('/mine/resume')],
      ['DELETE', path('/mine')],
    ] as const) {
      const res = await req(method, url, undefined, theirs);
      expect([401, 403, 404], `${method} ${url}`).toContain(res.status);
    }
    const made = await req(
      'POST',
      path(),
      { name: 'theirs', cron: '* * * * *', tool: 'builtin.echo' },
      theirs,
    );
    expect([401, 403, 404]).toContain(made.status);
    // Their own list does not show ours.
    const list = await req('GET', `/v1/projects/${other.id}/schedules`, undefined, theirs);
    expect(list.status).toBe(200);
    expect(list.body.schedules).toEqual([]);
    const mine = await req('GET', path('/mine'));
    expect(mine.body.paused).toBe(false);
  });
});

describe('firing', () => {
  it(
    'two api instances fire a per-second schedule once per tick over 30 ticks, one SIGKILLed midway',
    { timeout: 120_000 },
    async () => {
      const a = await spawnApi(1);
      await spawnApi(2);
      const made = await req('POST', path(), {
        name: 'every-second',
        cron: '* * * * * *',
        tool: 'builtin.echo',
        arguments: { from: 'schedule' },
      });
      expect(made.status).toBe(201);
      const firings = async () =>
        (await req('GET', path('/every-second?firings=500'))).body.firings as {
          tick_at: string;
          tool_call_id: string;
          published: boolean;
        }[];
      await until(async () => ((await firings()).length >= 15 ? true : undefined), 40_000);
      a.kill('SIGKILL');
      await once(a, 'exit');
      await until(async () => ((await firings()).length >= 32 ? true : undefined), 40_000);
      expect((await req('POST', path('/every-second/pause'))).status).toBe(200);

      const fired = (await firings()).reverse(); // oldest first
      const ticks = fired.map((f) => new Date(f.tick_at).getTime());
      // One firing per tick, and no tick left out between the first and the last.
      expect(new Set(ticks).size).toBe(ticks.length);
      for (let i = 1; i < ticks.length; i++) expect(ticks[i]! - ticks[i - 1]!).toBe(1_000);
      // Each firing is one call with exactly one card, and the ids differ per tick.
      const ids = fired.map((f) => f.tool_call_id);
      expect(new Set(ids).size).toBe(ids.length);
      const cards = await until(async () => {
        const { rows } = await mesh.api.store.pool.query<{ tool_call_id: string; n: string }>(
          `SELECT tool_call_id, count(*) AS n FROM cards
            WHERE project_id = $1 AND kind = 'tool.result' AND tool_call_id = ANY($2)
            GROUP BY tool_call_id`,
          [mesh.project.id, ids],
        );
        return rows.length === ids.length ? rows : undefined;
      }, 30_000);
      expect(cards.filter((r) => r.n !== '1')).toEqual([]);
      const shown = await req('GET', path('/every-second'));
      expect(shown.body.last_fire_at).toBe(fired.at(-1)?.tick_at);
      expect(shown.body.next_fire_at).toBeNull();
      const exec = await mesh.api.request(
        'GET',
        `/v1/projects/${mesh.project.id}/executions/${ids[0]}`,
        {
          key: mesh.project.key,
        },
      );
      expect(exec.body.execution).toMatchObject({ tool: 'builtin.echo', status: 'succeeded' });
    },
  );

  it('an agent schedule starts tasks that the worker finishes', { timeout: 60_000 }, async () => {
    await mesh.startWorker();
    if (apis.every((c) => c.exitCode !== null || c.signalCode !== null)) await spawnApi(3);
    await mesh.createAgent({
      id: 'reporter',
      script: [
        { toolCalls: [{ name: 'submit_result', arguments: { result: { report: 1 } } }] },
        { toolCalls: [{ name: 'submit_result', arguments: { result: { report: 2 } } }] },
      ],
    });
    const made = await req('POST', path(), {
      name: 'reports',
      cron: '*/2 * * * * *',
      agent: 'reporter',
      input: 'write the report',
    });
    expect(made.status).toBe(201);
    const fired = await until(async () => {
      const f = (await req('GET', path('/reports'))).body.firings as { task_id: string }[];
      return f.length >= 2 ? f : undefined;
    }, 30_000);
    await req('POST', path('/reports/pause'));
    for (const f of fired.slice(-2)) {
      const task = await mesh.finished(f.task_id);
      expect(task.status).toBe('succeeded');
    }
  });

  it('missed ticks: `skip` fires none of them, `once` fires one for all', async () => {
    // Only this pass may fire: the api processes of the tests above are stopped first.
    for (const c of apis) {
      if (c.exitCode === null && c.signalCode === null) {
        c.kill('SIGKILL');
        await once(c, 'exit');
      }
    }
    const scheduler = startScheduler({
      store: mesh.api.store,
      client: mesh.client,
      nc: mesh.nc,
      root: mesh.api.config.nats.subject_root,
      config: { ...mesh.api.config.schedules, enabled: false },
      instanceId: 'catch-up-test',
      logger: pino({ level: 'silent' }),
    });
    try {
      for (const catchUp of ['skip', 'once'] as const) {
        const name = `down-${catchUp}`;
        expect(
          (
            await req('POST', path(), {
              name,
              cron: '*/10 * * * * *',
              tool: 'builtin.echo',
              catch_up: catchUp,
            })
          ).status,
        ).toBe(201);
      }
      // Everything was down for five minutes: the schedules' next ticks lie in the past.
      const now = new Date();
      const since = new Date(Math.ceil((now.getTime() - 300_000) / 10_000) * 10_000);
      await mesh.api.store.pool.query(
        `UPDATE resource.schedules SET next_fire_at = $2 WHERE project_id = $1 AND name LIKE 'down-%'`,
        [mesh.project.id, since],
      );
      const fired = (await scheduler.pass(now)).filter((f) => f.name.startsWith('down-'));
      expect(fired.map((f) => f.name)).toEqual(['down-once']);
      const once = fired[0]!;
      // The one firing stands for the latest missed tick and counts the others.
      expect(now.getTime() - once.tick_at.getTime()).toBeLessThan(10_000);
      expect(once.tick_at.getTime() % 10_000).toBe(0);
      expect(once.missed).toBe(Math.round((once.tick_at.getTime() - since.getTime()) / 10_000));
      for (const name of ['down-skip', 'down-once']) {
        const s = (await req('GET', path(`/${name}`))).body;
        expect(new Date(s.next_fire_at).getTime()).toBeGreaterThan(now.getTime());
        expect(s.firings.length).toBe(name === 'down-once' ? 1 : 0);
        await req('DELETE', path(`/${name}`));
      }
    } finally {
      await scheduler.stop();
    }
  });
});

describe('CLI', () => {
  it(
    'creates, lists, shows, pauses, resumes and deletes schedules',
    { timeout: 180_000 },
    async () => {
      const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
      const cli = (args: string[]) =>
        runToolmesh(args, {
          TOOLMESH_API_URL: address,
          TOOLMESH_API_KEY: mesh.project.key,
          TOOLMESH_PROJECT: mesh.project.id,
        });
      const made = await cli([
        'schedules',
        'create',
        'cli-hourly',
        '--cron',
        '0 * * * *',
        '--tool',
        'builtin.echo',
        '--args',
        '{"from":"cli"}',
        '--timezone',
        'Asia/Tokyo',
      ]);
      expect(made.code, made.stderr).toBe(0);
      expect(made.stdout).toMatch(/schedule cli-hourly created; next run 20\d\d-/);
      const list = await cli(['schedules', 'list']);
      expect(list.stdout.split('\n')[0]).toMatch(/^NAME\s+CRON\s+TIMEZONE\s+FIRES/);
      expect(list.stdout).toMatch(/cli-hourly\s+0 \* \* \* \*\s+Asia\/Tokyo\s+builtin\.echo/);
      const shown = await cli(['schedules', 'show', 'cli-hourly', '--json']);
      expect(JSON.parse(shown.stdout)).toMatchObject({
        name: 'cli-hourly',
        arguments: { from: 'cli' },
      });
      expect((await cli(['schedules', 'pause', 'cli-hourly'])).stdout).toContain('paused');
      expect((await cli(['schedules', 'resume', 'cli-hourly'])).stdout).toContain(
        'resumed; next run',
      );
      const bad = await cli([
        'schedules',
        'create',
        'x',
        '--cron',
        'nope',
        '--tool',
        'builtin.echo',
      ]);
      expect(bad.code).not.toBe(0);
      expect(bad.stderr).toContain('invalid cron pattern');
      expect((await cli(['schedules', 'create', 'y', '--cron', '* * * * *'])).code).toBe(2);
      expect((await cli(['schedules', 'delete', 'cli-hourly'])).code).toBe(0);
      expect((await cli(['schedules', 'show', 'cli-hourly'])).code).toBe(4);
    },
  );
});
