// Red team, area "Bus": the mesh runs against an authenticated nats-server (operator mode, JWT
// users, as `pnpm stack` and compose run it), each service as its own user, and a tenant holds a
// bus credential of its project issued by the api. Each attack is shown refused or contained, and
// the services keep serving the tenant's own calls afterwards:
// - an unauthenticated connection;
// - publishing a tool call into another project, subscribing to another project's events;
// - deleting a stream, creating a consumer, reading stream info through `$JS.API`;
// - using a credential after it was revoked (its open connection is cut, new ones refused);
// - another project's api key minting, listing or revoking this project's credentials;
// - a forged result: a builtin.echo call carrying an agent's pending tool_call_id must not
//   plant that agent's result.
// Along the way the services serve the SDK, the CLI, an agent task and an MCP discovery as their
// own users, and the server's log shows no permission violation by any of them.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { jetstream, jetstreamManager } from '@nats-io/jetstream';
import { connect, headers } from '@nats-io/transport-node';
import { createClient } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import { allowViolations, startMcpHttpServer, type Violation } from '@toolmesh/testing';
import { Header, createNames, createSubjects, encodeMessage } from '@toolmesh/protocol';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { expectError } from '../../services/api/src/test/support.ts';
import { startBusMesh, type BusMesh } from '../support/bus-mesh.ts';
import { REPO_ROOT } from '../support/mesh.ts';
import { until } from '../support/procs.ts';

let bus: BusMesh;
let root: string;
let subjects: ReturnType<typeof createSubjects>;
let names: ReturnType<typeof createNames>;
let nats: BusMesh['nats'];
let mesh: BusMesh['mesh'];
let up: BusMesh['up'];
let admin: BusMesh['admin'];
let a: BusMesh['a'];
let b: BusMesh['b'];
let tenant: BusMesh['tenant'];
let tools: ToolsService | undefined;
const issue = (project: string, key: string, name?: string) => bus.issue(project, key, name);
const connectWith = (creds: string, reconnect?: boolean) => bus.connectWith(creds, reconnect);
const stillServing = () => bus.stillServing();

// Every attack here is a tenant trying what its credential may not: the server refuses and logs
// it. Those refusals are the point; a refusal of a service's own user still fails the test.
const refusedTenants: Violation[] = [];
beforeEach(() => {
  allowViolations((v) => {
    if (v.service !== undefined) return false;
    refusedTenants.push(v);
    return true;
  });
});

beforeAll(async () => {
  bus = await startBusMesh();
  ({ root, nats, mesh, up, admin, a, b, tenant } = bus);
  subjects = createSubjects(root);
  names = createNames(root);
}, 120_000);

afterAll(async () => {
  await tools?.stop(2_000);
  await bus?.close();
});

describe('credentials over HTTP', () => {
  it('issues a credential once: the list shows no seed, only metadata', async () => {
    expect(tenant.cred.seed).toMatch(/^SU[A-Z2-7]+$/);
    expect(tenant.cred.creds).toContain(tenant.cred.jwt);
    expect(tenant.cred.inbox_prefix).toMatch(new RegExp(`^_INBOX_${a.id}_`));
    const list = await mesh.api.request('GET', `/v1/projects/${a.id}/bus-credentials`, {
      key: a.key,
    });
    expect(list.status, list.raw).toBe(200);
    expect(list.body.credentials).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ id: tenant.cred.id, name: 'sdk', revoked_at: null }),
      ]),
    );
    expect(list.raw).not.toContain(tenant.cred.seed);
    expect(list.raw).not.toContain(tenant.cred.jwt);
    const row = await mesh.api.store.pool.query(
      'SELECT * FROM resource.bus_credentials WHERE credential_id = $1',
      [tenant.cred.id],
    );
    expect(JSON.stringify(row.rows)).not.toContain(tenant.cred.seed);
  });

  it("another project's key cannot mint, list or revoke this project's credentials", async () => {
    const url = `/v1/projects/${a.id}/bus-credentials`;
    expectError(
      await mesh.api.request('POST', url, { key: b.key, body: { name: 'x' } }),
      404,
      'not_found',
    );
    expectError(await mesh.api.request('GET', url, { key: b.key }), 404, 'not_found');
    expectError(
      await mesh.api.request('DELETE', `${url}/${tenant.cred.id}`, { key: b.key }),
      404,
      'not_found',
    );
    // Nor through its own project's path with this project's credential id.
    expectError(
      await mesh.api.request('DELETE', `/v1/projects/${b.id}/bus-credentials/${tenant.cred.id}`, {
        key: b.key,
      }),
      404,
      'not_found',
    );
    expectError(
      await mesh.api.request('POST', url, { key: a.key, body: { name: '' } }),
      400,
      'invalid_request',
    );
    await stillServing();
  });
});

describe('the bus', () => {
  it('refuses a connection without credentials', async () => {
    await expect(connect({ servers: nats.url, reconnect: false, timeout: 5_000 })).rejects.toThrow(
      /Authorization Violation/i,
    );
  });

  it('runs a call, awaits its result and cancels one with a project credential (SDK)', async () => {
    await stillServing();
    const id = randomUUID();
    const pending = tenant.client.callTool(
      {
        project: a.id,
        channel: 'main',
        tool: 'builtin.sleep',
        toolCallId: id,
        arguments: { ms: 60_000 },
      },
      { waitMs: 30_000 },
    );
    // Running once its execution row is written (calls that last get one).
    await until(async () => {
      const r = await mesh.api.store.pool.query(
        `SELECT 1 FROM state.tool_executions WHERE project_id = $1 AND tool_call_id = $2`,
        [a.id, id],
      );
      return r.rowCount ? true : undefined;
    });
    await tenant.client.cancel({ project: a.id, channel: 'main', toolCallId: id, reason: 'test' });
    const r = await pending;
    expect(r.status).toBe('canceled');
  });

  it("refuses publishing into another project's tool calls: nothing is stored or run", async () => {
    const js = jetstream(tenant.nc);
    const id = randomUUID();
    const subject = subjects.toolCall({
      project: b.id,
      channel: 'main',
      target: 'builtin',
      tool: 'echo',
    });
    const body = encodeMessage('tool_call', {
      v: 1,
      tool_call_id: id,
      tool_name: 'builtin.echo',
      arguments: { text: 'intruder' },
      after_execution: 'suspend',
    });
    await expect(js.publish(subject, body, { timeout: 3_000 })).rejects.toThrow(
      /Permissions Violation for Publish/i,
    );
    // Also not as a cancel of the other project, nor as a wakeup of an agent of this one.
    tenant.nc.publish(subjects.cancel({ project: b.id, channel: 'main' }), body);
    tenant.nc.publish(subjects.agentWakeup({ project: a.id, channel: 'main', agent: 'x' }), body);
    // The tenant's own call after it was served, so the other would have been seen by now.
    await stillServing();
    const jsm = await jetstreamManager(admin);
    expect(
      await jsm.streams.getMessage(names.projectCommandStream(b.id), { last_by_subj: subject }),
    ).toBeNull();
    expect(
      await jsm.streams.getMessage(names.projectCommandStream(a.id), {
        last_by_subj: subjects.agentWakeup({ project: a.id, channel: 'main', agent: 'x' }),
      }),
    ).toBeNull();
    expect(await mesh.api.store.cards.toolResult(b.id, id)).toBeUndefined();
  });

  it("refuses subscribing to another project's events and sees none of them", async () => {
    const nc = await connectWith(tenant.cred.creds);
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
    })();
    const seen: string[] = [];
    nc.subscribe(`${root}.v1.${b.id}.*.evt.>`, {
      callback: (e, m) => {
        if (!e) seen.push(m.subject);
      },
    });
    nc.subscribe(`${root}.v1.*.*.evt.>`, {
      callback: (e, m) => {
        if (!e) seen.push(m.subject);
      },
    });
    await nc.flush();
    // Project b's own call produces a result event on its evt subjects.
    const bClient = createClient({ nc: admin, root });
    const r = await bClient.callTool(
      { project: b.id, channel: 'main', tool: 'builtin.echo', arguments: { text: 'b only' } },
      { waitMs: 30_000 },
    );
    expect(r.status).toBe('succeeded');
    await until(() => Promise.resolve(errors.length >= 2 ? true : undefined), 10_000);
    expect(errors.join('\n')).toMatch(/Permissions Violation for Subscription/i);
    expect(seen).toEqual([]);
    await stillServing();
  });

  it("refuses reading another credential's replies (its inbox), in this project or another", async () => {
    const sibling = await issue(a.id, a.key, 'sibling');
    const foreign = await issue(b.id, b.key, 'foreign');
    for (const cred of [sibling, foreign]) {
      const nc = await connectWith(cred.creds);
      const errors: string[] = [];
      void (async () => {
        for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
      })();
      const seen: string[] = [];
      nc.subscribe(`${tenant.cred.inbox_prefix}.>`, {
        callback: (e, m) => {
          if (!e) seen.push(m.subject);
        },
      });
      nc.subscribe('_INBOX.>', {
        callback: (e, m) => {
          if (!e) seen.push(m.subject);
        },
      });
      await nc.flush();
      // The tenant's call gets its publish ack and result while the other one listens.
      await stillServing();
      await until(() => Promise.resolve(errors.length >= 2 ? true : undefined), 10_000);
      expect(errors.join('\n')).toMatch(/Permissions Violation for Subscription/i);
      expect(seen).toEqual([]);
      await nc.close();
    }
  });

  it('refuses the JetStream API: no stream deleted, no consumer created, no info', async () => {
    await expect(jetstreamManager(tenant.nc, { timeout: 3_000 })).rejects.toThrow(
      /Permissions Violation|timeout/i,
    );
    const jsm = await jetstreamManager(tenant.nc, { checkAPI: false, timeout: 3_000 });
    await expect(jsm.streams.delete(names.projectCommandStream(b.id))).rejects.toThrow(
      /Permissions Violation|timeout/i,
    );
    await expect(
      jsm.consumers.add(names.eventStream, { durable_name: 'spy', filter_subject: '>' }),
    ).rejects.toThrow(/Permissions Violation|timeout/i);
    await expect(jsm.streams.purge(names.projectCommandStream(b.id))).rejects.toThrow(
      /Permissions Violation|timeout/i,
    );
    const adminJsm = await jetstreamManager(admin);
    expect((await adminJsm.streams.info(names.projectCommandStream(b.id))).config.name).toBe(
      names.projectCommandStream(b.id),
    );
    const consumers: string[] = [];
    for await (const c of adminJsm.consumers.list(names.eventStream)) consumers.push(c.name);
    expect(consumers).not.toContain('spy');
    await stillServing();
  });

  it('cuts off a revoked credential: its connection is closed and it cannot reconnect', async () => {
    const cred = await issue(a.id, a.key, 'to-revoke');
    const nc = await connectWith(cred.creds, false);
    const client = createClient({ nc, root });
    const ok = await client.callTool(
      { project: a.id, channel: 'main', tool: 'builtin.echo', arguments: { text: 'before' } },
      { waitMs: 30_000 },
    );
    expect(ok.status).toBe('succeeded');
    const closed = nc.closed();
    const del = await mesh.api.request(
      'DELETE',
      `/v1/projects/${a.id}/bus-credentials/${cred.id}`,
      { key: a.key },
    );
    expect(del.status, del.raw).toBe(200);
    expect(del.body.revoked_at).toEqual(expect.any(String));
    const reason = await closed;
    expect(String(reason?.message ?? reason)).toMatch(/revoked|Authorization/i);
    await expect(connectWith(cred.creds, false)).rejects.toThrow(/Authorization Violation/i);
    // Revoking twice answers the same row; an unknown id is a 404.
    const again = await mesh.api.request(
      'DELETE',
      `/v1/projects/${a.id}/bus-credentials/${cred.id}`,
      { key: a.key },
    );
    expect(again.status, again.raw).toBe(200);
    expectError(
      await mesh.api.request('DELETE', `/v1/projects/${a.id}/bus-credentials/${randomUUID()}`, {
        key: a.key,
      }),
      404,
      'not_found',
    );
    // The tenant's other credential is untouched.
    await stillServing();
  });
});

describe('the CLI with a bus credential', () => {
  /** Runs `toolmesh` to its end against the authenticated server. */
  async function toolmesh(args: string[], env: Record<string, string>) {
    const child = spawn(process.execPath, [join(REPO_ROOT, 'packages/cli/src/main.ts'), ...args], {
      env: {
        PATH: process.env['PATH'] ?? '',
        NATS_URL: nats.url,
        TOOLMESH_SUBJECT_ROOT: root,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
    child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
    const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
    return { code, stdout, stderr };
  }

  it('calls a tool with TOOLMESH_BUS_CREDS; without it the server refuses the CLI', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'toolmesh-creds-'));
    try {
      const file = join(dir, 'a.creds');
      await writeFile(file, tenant.cred.creds, { mode: 0o600 });
      const call = ['call', 'builtin.echo', '-a', '{"text":"from the cli"}', '--json'];
      const ok = await toolmesh(call, { TOOLMESH_BUS_CREDS: file, TOOLMESH_PROJECT: a.id });
      expect(ok.code, ok.stderr).toBe(0);
      expect(JSON.parse(ok.stdout)).toMatchObject({
        status: 'succeeded',
        content: { result: { text: 'from the cli' } },
      });
      const anonymous = await toolmesh(call, { TOOLMESH_PROJECT: a.id });
      expect(anonymous.code).toBe(3);
      expect(anonymous.stderr).toMatch(/Authorization Violation/i);
      // The same credential naming the other project: refused by the server, nothing runs.
      const across = await toolmesh([...call, '--wait-ms', '3000'], {
        TOOLMESH_BUS_CREDS: file,
        TOOLMESH_PROJECT: b.id,
      });
      expect(across.code).not.toBe(0);
      expect(across.stderr + across.stdout).toMatch(/Permissions Violation|timeout/i);
      const missing = await toolmesh(call, {
        TOOLMESH_BUS_CREDS: join(dir, 'nope.creds'),
        TOOLMESH_PROJECT: a.id,
      });
      expect(missing.code).toBe(2);
      expect(missing.stderr).toContain('cannot read bus credential');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    await stillServing();
  });
});

describe('a forged result', () => {
  it("a builtin.echo call carrying an agent's pending tool_call_id does not plant its result", async () => {
    const reg = await mesh.api.request('POST', `/v1/projects/${a.id}/tools`, {
      key: a.key,
      body: {
        name: 'inventory.lookup',
        description: 'Look up an item of the inventory by its SKU',
        parameters: { type: 'object', properties: { sku: { type: 'string' } }, required: ['sku'] },
        kind: 'http',
        http: { method: 'GET', url: `${up.url}/echo/items/{sku}` },
      },
    });
    expect(reg.status, reg.raw).toBe(201);
    const agent = await mesh.createAgent({
      id: 'clerk',
      allowedTools: ['inventory.*'],
      script: [
        { toolCalls: [{ name: 'inventory__lookup', arguments: { sku: 'A-17' } }] },
        (req) => {
          const seen = req.body.messages
            .filter((m) => m.role === 'tool')
            .map((m) => JSON.parse(String(m.content)) as unknown);
          return { toolCalls: [{ name: 'submit_result', arguments: { result: seen } }] };
        },
      ],
    });
    // The tools service (target `inventory`) is not running yet: the agent's call waits.
    const taskId = await mesh.startTask(agent, 'Find item A-17.');
    const pending = await until(async () => {
      const r = await mesh.api.store.pool.query<{ tool_call_id: string }>(
        `SELECT tool_call_id FROM state.turn_calls WHERE project_id = $1 AND status = 'pending'
           AND tool_name = 'inventory.lookup'`,
        [a.id],
      );
      return r.rows[0]?.tool_call_id;
    }, 30_000);

    // The tenant (or a prompt-injected tool) files an echo under that id, asking for the wakeup.
    const js = jetstream(tenant.nc);
    const h = headers();
    h.set(Header.toolCallId, pending);
    h.set(Header.agentId, agent);
    const ack = await js.publish(
      subjects.toolCall({ project: a.id, channel: 'main', target: 'builtin', tool: 'echo' }),
      encodeMessage('tool_call', {
        v: 1,
        tool_call_id: pending,
        tool_name: 'builtin.echo',
        arguments: { planted: 'PLANTED' },
        after_execution: 'suspend',
      }),
      { headers: h, msgID: `forged-${pending}` },
    );
    // The builtin consumer has dealt with it (the skills service serves builtin).
    const jsm = await jetstreamManager(admin);
    await until(async () => {
      const info = await jsm.consumers.info(
        names.projectCommandStream(a.id),
        names.toolConsumer('builtin'),
      );
      return info.ack_floor.stream_seq >= ack.seq ? true : undefined;
    }, 30_000);
    expect(await mesh.api.store.cards.toolResult(a.id, pending)).toBeUndefined();

    // The owner of the target serves the agent's call: its result is the one the agent sees.
    tools = await startToolsService(
      loadConfig({
        env: mesh.api.serviceEnv('tools'),
      }),
      pino({ level: 'silent' }),
    );
    const task = await mesh.finished(taskId, 60_000);
    expect(task.status, JSON.stringify(task)).toBe('succeeded');
    const text = JSON.stringify(task.final_card?.content);
    expect(text).toContain('/echo/items/A-17');
    expect(text).not.toContain('PLANTED');
    const card = await mesh.api.store.cards.toolResult(a.id, pending);
    expect(JSON.stringify(card?.content)).not.toContain('PLANTED');
    await stillServing();
  });
});

describe('the services', () => {
  it('discover an MCP server over the bus (api request, tools service answer) as their users', async () => {
    expect(tools).toBeDefined(); // started by the forged-result test above
    const mcp = await startMcpHttpServer({ tools: ['echo'] });
    try {
      const server = await mesh.api.request('POST', `/v1/projects/${a.id}/mcp-servers`, {
        key: a.key,
        body: { name: 'kb', transport: 'http', url: mcp.url },
      });
      expect(server.body, server.raw).toMatchObject({ state: 'connected', tool_count: 1 });
      const r = await tenant.client.callTool(
        { project: a.id, channel: 'main', tool: 'kb.echo', arguments: { text: 'via mcp' } },
        { waitMs: 30_000 },
      );
      expect(r.status, JSON.stringify(r)).toBe('succeeded');
    } finally {
      await mcp.stop();
    }
  });

  it('never hit a permission violation themselves: each user has what its service needs', () => {
    // The attacks above were refused and logged by the server, all of them by tenant
    // credentials; a refusal of a service user would have failed its test (the test setup
    // allows only tenants' refusals here).
    expect(refusedTenants.map((v) => v.kind)).toEqual(
      expect.arrayContaining(['Publish', 'Subscription']),
    );
    expect(refusedTenants.filter((v) => v.service !== undefined)).toEqual([]);
  });
});
