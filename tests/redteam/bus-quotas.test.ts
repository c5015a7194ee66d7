// Red team, the bus as a shared resource: a tenant with its own bus credential tries to fill
// JetStream (messages on a subject nothing consumes, messages as large as the server takes) and
// to starve another project by flooding the tool services. Each project's commands have a
// stream of their own with [quotas] bus_* limits (or the project's own, which only the
// deployment's admin may set): the publish past one is refused at once, nothing of it is stored,
// and the other project's calls are taken between the flood's, not after it.
import { randomUUID } from 'node:crypto';
import { jetstreamManager } from '@nats-io/jetstream';
import { createNames } from '@toolmesh/protocol';
import { StreamPublishError, streamPublisher } from '@toolmesh/stream-publish';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ADMIN_KEY } from '../../services/api/src/test/support.ts';
import { startBusMesh, type BusMesh } from '../support/bus-mesh.ts';

let m: BusMesh;

beforeAll(async () => {
  m = await startBusMesh();
}, 120_000);

afterAll(async () => {
  await m?.close();
});

const setQuotas = (project: string, body: Record<string, number | null>, key = ADMIN_KEY) =>
  m.mesh.api.request('PUT', `/v1/projects/${project}/quotas`, { key, body });

describe('red team: bus quotas', () => {
  it("a project's command stream is bounded by config.toml's [quotas] bus_* from its creation", async () => {
    const names = createNames(m.root);
    const info = await (
      await jetstreamManager(m.admin)
    ).streams.info(names.projectCommandStream(m.b.id));
    expect(info.config).toMatchObject({
      max_bytes: m.mesh.api.config.quotas.bus_max_bytes,
      max_msgs: m.mesh.api.config.quotas.bus_max_messages,
      max_msg_size: m.mesh.api.config.quotas.bus_max_message_bytes,
      discard: 'new',
    });
    expect(info.config.subjects).toEqual([`${m.root}.v1.${m.b.id}.*.cmd.>`]);
  });

  it('fill: messages nothing consumes stop at the quota, refused to the publisher; others are served', async () => {
    const project = await m.mesh.api.createProject();
    const res = await setQuotas(project.id, {
      bus_max_messages: 40,
      bus_max_message_bytes: 65_536,
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      quotas: { bus_max_messages: 40, bus_max_message_bytes: 65_536 },
      effective: { bus_max_messages: 40, bus_max_bytes: m.mesh.api.config.quotas.bus_max_bytes },
    });
    const cred = await m.issue(project.id, project.key, 'filler');
    const nc = await m.connectWith(cred.creds);
    const nobody = `${m.root}.v1.${project.id}.main.cmd.tool.nobody.hoard`;
    const chunk = new Uint8Array(32 * 1024);
    let stored = 0;
    let refusal: unknown;
    for (let i = 0; i < 100 && refusal === undefined; i++) {
      await streamPublisher(nc)
        .publish(nobody, chunk)
        .then(
          () => stored++,
          (err: unknown) => (refusal = err),
        );
    }
    expect(stored).toBe(40);
    expect(refusal).toBeInstanceOf(StreamPublishError);
    expect((refusal as StreamPublishError).message).toMatch(/maximum messages exceeded/);
    // Larger than the project's largest message: refused whatever room is left.
    const big = await streamPublisher(nc)
      .publish(nobody, new Uint8Array(70_000))
      .catch((e: unknown) => e);
    expect((big as Error).message).toMatch(/message size exceeds maximum/);
    const info = await (
      await jetstreamManager(m.admin)
    ).streams.info(createNames(m.root).projectCommandStream(project.id));
    expect(info.state.messages).toBe(40);
    expect(info.state.bytes).toBeLessThan(41 * 33 * 1024);

    // Its own calls now: the SDK and HTTP say quota_exceeded; nothing was stored or runs.
    const client = m.connectWith(cred.creds).then(async (c) => {
      const { createClient } = await import('@toolmesh/client');
      return createClient({ nc: c, root: m.root });
    });
    const sdk = await (
      await client
    )
      .callTool({ project: project.id, channel: 'main', tool: 'builtin.echo', arguments: {} })
      .catch((e: unknown) => e);
    expect(sdk).toMatchObject({ code: 'quota_exceeded', details: { quota: 'bus_max_messages' } });
    const http = await m.mesh.api.request('POST', `/v1/projects/${project.id}/executions`, {
      key: project.key,
      body: { tool: 'builtin.echo', arguments: { n: 1 }, tool_call_id: `q-${randomUUID()}` },
    });
    expect(http.status, http.raw).toBe(429);
    expect(http.body).toMatchObject({ error: { code: 'quota_exceeded' } });
    await (await client).close();

    // Another project, and the other tenant, are served as ever.
    await m.stillServing();
    // The admin raises the quota: the same stream takes more at once.
    expect((await setQuotas(project.id, { bus_max_messages: 60 })).status).toBe(200);
    await expect(streamPublisher(nc).publish(nobody, chunk)).resolves.toMatchObject({ seq: 41 });
  }, 60_000);

  it('a tenant cannot change its own quotas, by the quotas route or its settings', async () => {
    const res = await setQuotas(m.a.id, { bus_max_messages: 1e9 }, m.a.key);
    expect([401, 403]).toContain(res.status);
    const patch = await m.mesh.api.request('PATCH', `/v1/projects/${m.a.id}/settings`, {
      key: m.a.key,
      body: { quotas: { bus_max_messages: 1e9 } },
    });
    expect(patch.status).toBe(400);
    const info = await (
      await jetstreamManager(m.admin)
    ).streams.info(createNames(m.root).projectCommandStream(m.a.id));
    expect(info.config.max_msgs).toBe(m.mesh.api.config.quotas.bus_max_messages);
  });

  it("starve: another project's call is taken between a flood's calls, not after them", async () => {
    const flood = await m.mesh.api.createProject();
    const cred = await m.issue(flood.id, flood.key, 'flood');
    const nc = await m.connectWith(cred.creds);
    const { createClient } = await import('@toolmesh/client');
    const flooder = createClient({ nc, root: m.root });
    const CALLS = 1_500;
    const ids = Array.from({ length: CALLS }, () => randomUUID());
    for (let i = 0; i < CALLS; i += 100) {
      await Promise.all(
        ids.slice(i, i + 100).map((toolCallId) =>
          flooder.publishToolCall({
            project: flood.id,
            channel: 'main',
            tool: 'builtin.sleep',
            toolCallId,
            arguments: { ms: 200 },
          }),
        ),
      );
    }
    // The other project's one call, once the flood is stored in full.
    await m.stillServing();
    const done = await m.mesh.api.store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM state.tool_executions WHERE project_id = $1 AND status <> 'running'`,
      [flood.id],
    );
    // Served while most of the flood was still waiting (by order, not by time).
    expect(Number(done.rows[0]?.n)).toBeLessThan(CALLS / 2);
    await flooder.close();
  }, 120_000);

  it('rate: a project over its calls a minute gets rate_limited cards and nothing runs; another is served', async () => {
    const flood = await m.mesh.api.createProject();
    const res = await setQuotas(flood.id, { bus_calls_per_minute: 10 });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      quotas: { bus_calls_per_minute: 10 },
      effective: { bus_calls_per_minute: 10 },
    });
    // The tenant cannot lift it itself.
    const own = await setQuotas(flood.id, { bus_calls_per_minute: 0 }, flood.key);
    expect([401, 403]).toContain(own.status);

    const cred = await m.issue(flood.id, flood.key, 'rate');
    const { createClient } = await import('@toolmesh/client');
    const flooder = createClient({ nc: await m.connectWith(cred.creds), root: m.root });
    const CALLS = 30;
    const started = Date.now();
    const results = await Promise.all(
      Array.from({ length: CALLS }, (_, i) =>
        flooder.callTool(
          {
            project: flood.id,
            channel: 'main',
            tool: 'builtin.write_file',
            arguments: { path: `/rate/${i}.txt`, content: `call ${i}` },
          },
          { waitMs: 30_000 },
        ),
      ),
    );
    const elapsedSec = (Date.now() - started) / 1000;
    const ran = results.filter((r) => r.status === 'succeeded');
    const limited = results.filter((r) => r.status !== 'succeeded');
    // The bucket holds a minute's worth (10) and refills 10 a minute while the calls ran.
    expect(ran.length).toBeGreaterThanOrEqual(10);
    expect(ran.length).toBeLessThanOrEqual(10 + Math.ceil(elapsedSec / 6));
    expect(limited.length).toBe(CALLS - ran.length);
    for (const r of limited) {
      expect(r.status).toBe('failed');
      expect(r.content.error).toMatchObject({
        code: 'rate_limited',
        details: { quota: 'bus_calls_per_minute', limit: 10 },
      });
      const retry = (r.content.error?.details as { retry_after_sec: number }).retry_after_sec;
      expect(retry).toBeGreaterThanOrEqual(1);
      expect(retry).toBeLessThanOrEqual(7);
    }
    // The refused calls wrote nothing: one file per call that ran.
    const files = await m.mesh.api.store.pool.query<{ n: string }>(
      `SELECT count(*) AS n FROM state.project_files WHERE project_id = $1`,
      [flood.id],
    );
    expect(Number(files.rows[0]?.n)).toBe(ran.length);

    // Over HTTP the refusal is the call's result.
    const http = await m.mesh.api.request('POST', `/v1/projects/${flood.id}/executions`, {
      key: flood.key,
      body: { tool: 'builtin.echo', arguments: { n: 1 } },
    });
    expect(http.status, http.raw).toBe(200);
    expect(http.body).toMatchObject({
      execution: { status: 'failed' },
      card: { content: { error: { code: 'rate_limited' } } },
    });

    // Another project, more calls than the flood's rate, at the same time: every one runs.
    const others = await Promise.all(
      Array.from({ length: 15 }, (_, i) =>
        m.mesh.api.request('POST', `/v1/projects/${m.b.id}/executions`, {
          key: m.b.key,
          body: { tool: 'builtin.echo', arguments: { i } },
        }),
      ),
    );
    for (const o of others) {
      expect(o.status, o.raw).toBe(200);
      expect(o.body).toMatchObject({ execution: { status: 'succeeded' } });
    }
    await m.stillServing();

    // Back to config.toml's rate: the project's calls run again.
    expect((await setQuotas(flood.id, { bus_calls_per_minute: null })).body).toMatchObject({
      effective: { bus_calls_per_minute: m.mesh.api.config.quotas.bus_calls_per_minute },
    });
    const again = await flooder.callTool(
      { project: flood.id, channel: 'main', tool: 'builtin.echo', arguments: { again: true } },
      { waitMs: 30_000 },
    );
    expect(again.status, JSON.stringify(again.content)).toBe('succeeded');
    await flooder.close();
  }, 90_000);
});
