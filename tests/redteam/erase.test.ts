// Red team, "erase": a tenant of project b, holding nothing but its own project key and bus
// credential, tries to make project a's calls vanish. JetStream drops a publish whose
// Nats-Msg-Id its command stream already holds (one stream, one dedupe window, every project's
// ids), and anyone may set any Nats-Msg-Id on what they publish, on their own subject. So the
// attacker publishes first, under b, calls carrying every id it can guess a's publishers will
// use (`<project>/<tool_call_id>` and the other readable forms of protocol 5), for ids users
// choose or that are derived from guessable things: a tool_call_id, an MCP idempotency key, a
// schedule's name and tick, an approval's call. Each of a's calls must still run and finish, and
// a publish a reports duplicate must be one a itself sent. The mesh runs as deployed: each
// service as its own NATS user, the tenants on credentials the api issued.
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { jetstream, type JetStreamClient } from '@nats-io/jetstream';
import { Client as McpClient } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateTaskResultSchema, GetTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { createClient } from '@toolmesh/client';
import { MsgId, createSubjects, encodeMessage } from '@toolmesh/protocol';
import { idempotentCallId } from '../../services/api/src/mcp/calls.ts';
import { startScheduler } from '../../services/api/src/schedules/scheduler.ts';
import { tickToolCallId } from '../../services/api/src/schedules/ticks.ts';
import { startBusMesh, type BusMesh } from '../support/bus-mesh.ts';
import { runToolmesh } from '../support/cli.ts';
import { until } from '../support/procs.ts';

let bus: BusMesh;
let subjects: ReturnType<typeof createSubjects>;
/** The attacker: project b's own bus credential, as its SDK or a plain client would use it. */
let attacker: JetStreamClient;
let baseUrl: string;

beforeAll(async () => {
  bus = await startBusMesh();
  subjects = createSubjects(bus.root);
  const cred = await bus.issue(bus.b.id, bus.b.key, 'attacker');
  attacker = jetstream(await bus.connectWith(cred.creds));
  baseUrl = await bus.mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);

afterAll(async () => {
  await bus?.close();
});

/**
 * The attack: one of b's own calls (builtin.echo, on b's subject, which b's credential may
 * publish) per id, each carrying that id as its Nats-Msg-Id. Every one is stored: the stream
 * now holds the id inside its dedupe window.
 */
async function plant(ids: string[]): Promise<void> {
  for (const id of ids) {
    const ack = await attacker.publish(
      subjects.toolCall({ project: bus.b.id, channel: 'main', target: 'builtin', tool: 'echo' }),
      encodeMessage('tool_call', {
        v: 1,
        tool_call_id: randomUUID(),
        tool_name: 'builtin.echo',
        arguments: { text: 'planted' },
        after_execution: 'suspend',
      }),
      { msgID: id },
    );
    expect(ack.duplicate, id).toBe(false);
  }
}

/** Every readable Nats-Msg-Id a's publishers could put on the call `id` (protocol 5). */
const guesses = (project: string, id: string) => [
  MsgId.toolCall(project, id),
  MsgId.approvalDecided(project, id),
  MsgId.toolResult(project, id),
];

/** The execution of a call once it finished, as its owner reads it over HTTP. */
async function finished(project: { id: string; key: string }, id: string) {
  return until(async () => {
    const r = await bus.mesh.api.request('GET', `/v1/projects/${project.id}/executions/${id}`, {
      key: project.key,
    });
    const status = (r.body as { execution?: { status?: string } } | undefined)?.execution?.status;
    if (status === undefined || ['queued', 'running', 'awaiting_approval'].includes(status)) {
      return undefined;
    }
    return r.body as { execution: { status: string; tool_name: string } };
  }, 30_000);
}

describe("another project's Nats-Msg-Ids cannot erase a call", () => {
  it('over the bus: the SDK publish is stored and runs; only its own repeat is a duplicate', async () => {
    const { a, tenant } = bus;
    const id = `order-${randomUUID()}`;
    await plant(guesses(a.id, id));
    const req = {
      project: a.id,
      channel: 'main',
      tool: 'builtin.echo',
      arguments: { text: 'mine' },
      toolCallId: id,
    };
    const sent = await tenant.client.publishToolCall(req);
    expect(sent.duplicate).toBe(false);
    expect(await finished(a, id)).toMatchObject({ execution: { status: 'succeeded' } });
    // A duplicate is a publish this project sent: the same client's retry is one.
    const again = await tenant.client.publishToolCall(req);
    expect(again).toMatchObject({ duplicate: true, seq: sent.seq });
  });

  it('the CLI: `toolmesh call --no-wait --id` is stored and runs', async () => {
    const { a, nats, root, tenant } = bus;
    const id = `cli-${randomUUID()}`;
    await plant(guesses(a.id, id));
    const dir = await mkdtemp(join(tmpdir(), 'toolmesh-erase-'));
    try {
      const file = join(dir, 'a.creds');
      await writeFile(file, tenant.cred.creds, { mode: 0o600 });
      const run = await runToolmesh(
        ['call', 'builtin.echo', '-a', '{"text":"cli"}', '--id', id, '--no-wait', '--json'],
        {
          NATS_URL: nats.url,
          TOOLMESH_SUBJECT_ROOT: root,
          TOOLMESH_BUS_CREDS: file,
          TOOLMESH_PROJECT: a.id,
        },
      );
      expect(run.code, run.stderr).toBe(0);
      expect(JSON.parse(run.stdout)).toMatchObject({ tool_call_id: id, duplicate: false });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    expect(await finished(a, id)).toMatchObject({ execution: { status: 'succeeded' } });
  });

  it('over HTTP: POST /executions with a chosen tool_call_id, not waiting, runs', async () => {
    const { a, mesh } = bus;
    const id = `invoice-${randomUUID()}`;
    await plant(guesses(a.id, id));
    const res = await mesh.api.request('POST', `/v1/projects/${a.id}/executions`, {
      key: a.key,
      headers: { 'idempotency-key': `key-${id}` },
      body: { tool: 'builtin.echo', arguments: { text: 'http' }, tool_call_id: id, wait: false },
    });
    expect(res.status, res.raw).toBe(202);
    expect(await finished(a, id)).toMatchObject({ execution: { status: 'succeeded' } });
  });

  it('the MCP facade: a task keyed by a guessable idempotency key completes', async () => {
    const { a } = bus;
    const key = `nightly-report-${randomUUID()}`;
    // The task's id is derived from the project and the key, both of which the attacker knows.
    await plant(guesses(a.id, idempotentCallId(a.id, key)));
    const client = new McpClient({ name: 'erase-test', version: '1.0.0' });
    await client.connect(
      new StreamableHTTPClientTransport(new URL(`${baseUrl}/v1/projects/${a.id}/mcp`), {
        requestInit: { headers: { authorization: `Bearer ${a.key}` } },
      }),
    );
    try {
      const { task } = await client.request(
        {
          method: 'tools/call',
          params: {
            name: 'builtin__echo',
            arguments: { text: 'task' },
            task: { ttl: 60_000 },
            _meta: { 'io.toolmesh/idempotency-key': key },
          },
        },
        CreateTaskResultSchema,
      );
      expect(task.taskId).toBe(idempotentCallId(a.id, key));
      const done = await until(async () => {
        const got = await client.request(
          { method: 'tasks/get', params: { taskId: task.taskId } },
          GetTaskResultSchema,
        );
        return got.status === 'working' ? undefined : got;
      }, 30_000);
      expect(done.status).toBe('completed');
    } finally {
      await client.close();
    }
  });

  it("a schedule's tick, whose id follows from its name and times, fires a call that runs", async () => {
    const { a, mesh } = bus;
    const name = `sweep-${Date.now().toString(36)}`;
    const created = await mesh.api.request('POST', `/v1/projects/${a.id}/schedules`, {
      key: a.key,
      body: { name, cron: '0 3 * * *', tool: 'builtin.echo', arguments: { text: 'tick' } },
    });
    expect(created.status, created.raw).toBe(201);
    // The tick due now: its tool_call_id is `sch-<name>-<created>-<tick>`.
    const tick = new Date(Math.floor(Date.now() / 1000) * 1000);
    await mesh.api.store.pool.query(
      `UPDATE resource.schedules SET next_fire_at = $3 WHERE project_id = $1 AND name = $2`,
      [a.id, name, tick],
    );
    const id = tickToolCallId(
      { project_id: a.id, name, created_at: new Date(created.body.created_at as string) },
      tick,
    );
    await plant(guesses(a.id, id));
    // One pass of the api's scheduler, on the api's own connection, as every api instance runs it.
    const scheduler = startScheduler({
      store: mesh.api.store,
      client: createClient({ nc: mesh.api.nc, root: bus.root }),
      nc: mesh.api.nc,
      root: bus.root,
      config: { ...mesh.api.config.schedules, enabled: false },
      instanceId: 'erase-test',
      logger: pino({ level: 'silent' }),
    });
    try {
      const fired = (await scheduler.pass(new Date())).filter((f) => f.name === name);
      expect(fired.map((f) => f.tool_call_id)).toEqual([id]);
    } finally {
      await scheduler.stop();
    }
    expect(await finished(a, id)).toMatchObject({ execution: { status: 'succeeded' } });
  });

  it('an approved call is published again and runs', async () => {
    const { mesh } = bus;
    // A project of its own, whose builtin target requires approval.
    const c = await mesh.api.createProject();
    const set = await mesh.api.request('PUT', `/v1/projects/${c.id}/targets/builtin/approval`, {
      key: c.key,
      body: { approval: 'required' },
    });
    expect(set.status, set.raw).toBe(200);
    const id = `payout-${randomUUID()}`;
    await plant(guesses(c.id, id));
    const res = await mesh.api.request('POST', `/v1/projects/${c.id}/executions`, {
      key: c.key,
      body: {
        tool: 'builtin.echo',
        arguments: { text: 'approved' },
        tool_call_id: id,
        wait: false,
      },
    });
    expect(res.status, res.raw).toBe(202);
    const pending = await until(async () => {
      const r = await mesh.api.request('GET', `/v1/projects/${c.id}/approvals`, { key: c.key });
      return (r.body.approvals as { tool_call_id: string; approval_id: string }[]).find(
        (p) => p.tool_call_id === id,
      );
    }, 30_000);
    const approved = await mesh.api.request(
      'POST',
      `/v1/projects/${c.id}/approvals/${pending.approval_id}/approve`,
      { key: c.key, body: {} },
    );
    expect(approved.status, approved.raw).toBe(200);
    expect(await finished(c, id)).toMatchObject({ execution: { status: 'succeeded' } });
  });

  it('the services still serve the tenant', async () => {
    await bus.stillServing();
  });
});
