// Human approvals against real processes (the api, skills services as child processes that are
// SIGKILLed, NATS, Postgres): a call of a target that requires approval waits durably as
// awaiting_approval while holding nothing, survives the death of the service that parked it, and
// is decided exactly once: approved (it runs once, one card, one execution), denied (a failed
// card approval_denied saying who and why), raced by two api instances (one decision wins), or
// left undecided (approval_timeout, filed by a service started after the deadline passed).
// Another project's key cannot see or decide any of it.
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { createPool, createStore, type Store } from '@toolmesh/store';
import type { ToolResult } from '@toolmesh/client';
import { buildApp, type ApiApp } from '../services/api/src/app.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { until } from './support/procs.ts';
import { runToolmesh } from './support/cli.ts';

let mesh: SkillsMesh;
let other: { id: string; key: string };
let skills: ChildProcess;
let seq = 0;

beforeAll(async () => {
  mesh = await startSkillsMesh({ CG__TOOLS__APPROVAL_SCAN_INTERVAL_MS: '200' });
  other = await mesh.api.createProject();
  skills = await mesh.spawnSkills();
  const set = await api('PUT', '/targets/builtin/approval', { approval: 'required' });
  expect(set.status, set.raw).toBe(200);
}, 120_000);
afterAll(async () => {
  if (skills && skills.exitCode === null && skills.signalCode === null) {
    skills.kill('SIGKILL');
    await once(skills, 'exit');
  }
  await mesh?.close();
});

const api = (
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE',
  path: string,
  body?: unknown,
  project = mesh.project,
) => mesh.api.request(method, `/v1/projects/${project.id}${path}`, { key: project.key, body });

const keyIdOf = async () => {
  const keys = await api('GET', '/keys');
  return (keys.body.keys as { key_id: string }[])[0]!.key_id;
};

/** Publishes a builtin.echo call and returns its id and the promise of its result. */
function call(args: Record<string, unknown>, timeoutMs = 10_000) {
  const toolCallId = `appr-${++seq}-${Date.now()}`;
  const result: Promise<ToolResult> = mesh.client.callTool(
    {
      project: mesh.project.id,
      channel: 'main',
      tool: 'builtin.echo',
      arguments: args,
      toolCallId,
      timeoutMs,
    },
    { waitMs: 120_000 },
  );
  return { toolCallId, result };
}

/** The pending approval of a call, once its service parked it. */
const pendingOf = (toolCallId: string) =>
  until(async () => {
    const r = await api('GET', '/approvals');
    return (r.body.approvals as { tool_call_id: string; approval_id: string }[]).find(
      (a) => a.tool_call_id === toolCallId,
    );
  }, 30_000);

async function restartSkills(): Promise<void> {
  skills.kill('SIGKILL');
  await once(skills, 'exit');
  skills = await mesh.spawnSkills();
}

const cardsOf = async (toolCallId: string) =>
  (
    await mesh.api.store.pool.query(
      `SELECT kind, content FROM cards WHERE project_id = $1 AND tool_call_id = $2`,
      [mesh.project.id, toolCallId],
    )
  ).rows as { kind: string; content: any }[];

describe('approvals', () => {
  it('a granted call waits holding nothing, survives its service, then runs once', async () => {
    const { toolCallId, result } = call({ text: 'ship it' });
    const pending = await pendingOf(toolCallId);
    const listed = await api('GET', `/approvals/${pending.approval_id}`);
    expect(listed.body).toMatchObject({
      tool_call_id: toolCallId,
      tool_name: 'builtin.echo',
      status: 'pending',
      arguments: { text: 'ship it' },
      required_by: { source: 'target', mode: 'required' },
      decided_by: null,
    });
    // Where users look: the execution says awaiting_approval; no card exists yet.
    const exec = await api('GET', `/executions/${toolCallId}`);
    expect(exec.body.execution.status, exec.raw).toBe('awaiting_approval');
    expect(await cardsOf(toolCallId)).toEqual([]);
    // No lease is held while it waits.
    const bucket = `${mesh.api.config.nats.subject_root}_leases`;
    const kv = await mesh.api.nc.request(
      `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
      JSON.stringify({ last_by_subj: `$KV.${bucket}.${mesh.project.id}.${toolCallId}` }),
    );
    const lease = JSON.parse(new TextDecoder().decode(kv.data)) as {
      error?: { code: number };
      message?: { hdrs?: string };
    };
    // Either never written or deleted (a delete marker carries KV-Operation: DEL).
    const hdrs = lease.message?.hdrs ? Buffer.from(lease.message.hdrs, 'base64').toString() : '';
    expect(lease.error?.code === 404 || /KV-Operation: (DEL|PURGE)/.test(hdrs), kv.string()).toBe(
      true,
    );

    // The service that parked it dies; another starts. The call still waits.
    await restartSkills();
    expect((await api('GET', `/approvals/${pending.approval_id}`)).body.status).toBe('pending');

    const approved = await api('POST', `/approvals/${pending.approval_id}/approve`, {
      reason: 'looks fine',
    });
    expect(approved.status, approved.raw).toBe(200);
    const keyId = await keyIdOf();
    expect(approved.body).toMatchObject({ status: 'approved', decided_by: `key:${keyId}` });
    const r = await result;
    expect(r.status).toBe('succeeded');
    expect(r.content.result).toMatchObject({ text: 'ship it' });
    // A repeated approve answers the first decision and runs nothing again.
    const again = await api('POST', `/approvals/${pending.approval_id}/approve`, {});
    expect(again.status).toBe(200);
    expect(again.body.decided_at).toBe(approved.body.decided_at);
    const denyLate = await api('POST', `/approvals/${pending.approval_id}/deny`, { reason: 'x' });
    expect(denyLate.status).toBe(409);
    expect(denyLate.body.error.code).toBe('conflict');
    const cards = await cardsOf(toolCallId);
    expect(cards.filter((c) => c.kind === 'tool.result')).toHaveLength(1);
    const done = await api('GET', `/executions/${toolCallId}`);
    expect(done.body.execution).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('a denied call files approval_denied saying who decided and why', async () => {
    const { toolCallId, result } = call({ text: 'drop the table' });
    const pending = await pendingOf(toolCallId);
    const denied = await api('POST', `/approvals/${pending.approval_id}/deny`, {
      reason: 'not during the freeze',
    });
    expect(denied.status, denied.raw).toBe(200);
    const r = await result;
    const keyId = await keyIdOf();
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({
      code: 'approval_denied',
      details: {
        approval_id: pending.approval_id,
        decided_by: `key:${keyId}`,
        reason: 'not during the freeze',
      },
    });
    expect(r.content.error!.message).toContain(`key:${keyId}`);
    expect(r.content.error!.message).toContain('not during the freeze');
    expect((await api('GET', `/executions/${toolCallId}`)).body.execution).toMatchObject({
      status: 'failed',
      error_code: 'approval_denied',
    });
    // Deny needs a reason.
    const { toolCallId: id2 } = call({ text: 'second' });
    const p2 = await pendingOf(id2);
    const bare = await api('POST', `/approvals/${p2.approval_id}/deny`, {});
    expect(bare.status).toBe(400);
    await api('POST', `/approvals/${p2.approval_id}/deny`, { reason: 'cleanup' });
  });

  it('two api instances racing approve and deny decide it exactly once', async () => {
    // A second api instance: its own app, pool and store over the same database and NATS.
    const pool = createPool({
      url: mesh.api.env['CG__POSTGRES__URL']!,
      max: 4,
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 5_000,
      logger: pino({ level: 'silent' }),
    });
    const store2: Store = createStore(pool);
    const app2: ApiApp = await buildApp({
      config: mesh.api.config,
      store: store2,
      nc: mesh.api.nc,
      client: mesh.client,
      artifacts: mesh.api.artifacts,
      logger: pino({ level: 'silent' }),
    });
    try {
      for (let round = 0; round < 3; round++) {
        const { toolCallId, result } = call({ round });
        const pending = await pendingOf(toolCallId);
        const url = `/v1/projects/${mesh.project.id}/approvals/${pending.approval_id}`;
        const auth = { authorization: `Bearer ${mesh.project.key}` };
        const [a, b] = await Promise.all([
          mesh.api.request('POST', `${url}/approve`, { key: mesh.project.key, body: {} }),
          app2.inject({
            method: 'POST',
            url: `${url}/deny`,
            headers: { ...auth, 'content-type': 'application/json' },
            payload: JSON.stringify({ reason: 'racing' }),
          }),
        ]);
        const statuses = [a.status, b.statusCode].sort();
        expect(statuses).toEqual([200, 409]);
        const winner = a.status === 200 ? 'approved' : 'denied';
        const r = await result;
        expect(r.status).toBe(winner === 'approved' ? 'succeeded' : 'failed');
        const cards = await cardsOf(toolCallId);
        expect(cards.filter((c) => c.kind === 'tool.result')).toHaveLength(1);
        const row = (await api('GET', `/approvals/${pending.approval_id}`)).body;
        expect(row.status).toBe(winner);
      }
    } finally {
      await app2.close();
      await store2.close();
    }
  });

  it('an approver that dies between its decision and the publish: the call still runs once', async () => {
    const { toolCallId, result } = call({ text: 'orphaned decision' });
    const pending = await pendingOf(toolCallId);
    // What an api instance killed right after its decision committed leaves behind: the row
    // decided, the call never published again. The next tool service scan publishes it.
    const decided = await mesh.api.store.approvals.decide(
      mesh.project.id,
      pending.approval_id,
      'approved',
      'key:dead-approver',
      'approved just before the crash',
    );
    expect(decided?.decided).toBe(true);
    const r = await result;
    expect(r.status).toBe('succeeded');
    expect(r.content.result).toMatchObject({ text: 'orphaned decision' });
    // Neither a second decision nor the scan's next pass runs it again.
    const again = await api('POST', `/approvals/${pending.approval_id}/approve`, {});
    expect(again.body).toMatchObject({ status: 'approved', decided_by: 'key:dead-approver' });
    await new Promise((resolve) => setTimeout(resolve, 1_000));
    const cards = await cardsOf(toolCallId);
    expect(cards.filter((c) => c.kind === 'tool.result')).toHaveLength(1);
    const done = await api('GET', `/executions/${toolCallId}`);
    expect(done.body.execution).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('a call canceled while it waits ends canceled at once, and its approval says so', async () => {
    const { toolCallId, result } = call({ text: 'never mind' });
    const pending = await pendingOf(toolCallId);
    await mesh.client.cancel({
      project: mesh.project.id,
      channel: 'main',
      toolCallId,
      reason: 'the user changed their mind',
    });
    const r = await result;
    expect(r.status).toBe('canceled');
    expect(r.content.error?.message).toContain('the user changed their mind');
    const row = (await api('GET', `/approvals/${pending.approval_id}`)).body;
    expect(row).toMatchObject({ status: 'canceled', decided_by: 'cancel' });
    const listed = await api('GET', '/approvals?status=canceled');
    expect(
      (listed.body.approvals as { approval_id: string }[]).map((a) => a.approval_id),
    ).toContain(pending.approval_id);
    // Nobody can approve it any more; it never runs.
    const late = await api('POST', `/approvals/${pending.approval_id}/approve`, {});
    expect(late.status).toBe(409);
    const cards = await cardsOf(toolCallId);
    expect(cards.filter((c) => c.kind === 'tool.result')).toHaveLength(1);
    const done = await api('GET', `/executions/${toolCallId}`);
    expect(done.body.execution.status).toBe('canceled');
  });

  it('an undecided call times out, filed even though no service ran at its deadline', async () => {
    const set = await api('PUT', '/targets/builtin/approval', {
      approval: 'required',
      approval_timeout_ms: 1_500,
    });
    expect(set.status).toBe(200);
    try {
      const { toolCallId, result } = call({ text: 'nobody answers' });
      const pending = await pendingOf(toolCallId);
      const row = (await api('GET', `/approvals/${pending.approval_id}`)).body;
      // Nothing runs while the deadline passes.
      skills.kill('SIGKILL');
      await once(skills, 'exit');
      await until(
        () => Promise.resolve(Date.now() > Date.parse(row.expires_at) + 200 ? true : undefined),
        10_000,
      );
      expect((await api('GET', `/approvals/${pending.approval_id}`)).body.status).toBe('pending');
      skills = await mesh.spawnSkills();
      const r = await result;
      expect(r.status).toBe('failed');
      expect(r.content.error).toMatchObject({
        code: 'approval_timeout',
        details: { approval_id: pending.approval_id, decided_by: 'system', timeout_ms: 1_500 },
      });
      const after = (await api('GET', `/approvals/${pending.approval_id}`)).body;
      expect(after).toMatchObject({ status: 'timed_out', decided_by: 'system' });
      // A decision after the deadline gets the timeout.
      const late = await api('POST', `/approvals/${pending.approval_id}/approve`, {});
      expect(late.status).toBe(409);
    } finally {
      await api('PUT', '/targets/builtin/approval', { approval: 'required' });
    }
  });

  it('a tool option and destructive hints require approval; other targets run at once', async () => {
    expect((await api('DELETE', '/targets/builtin/approval')).status).toBe(204);
    // Without a policy, builtin.echo runs at once.
    const free = call({ text: 'free' });
    expect((await free.result).status).toBe('succeeded');
    // destructive: builtin.echo is not annotated destructive, so it runs.
    const patched = await api('PATCH', '/tools/builtin.echo', {
      options: { approval: 'destructive' },
    });
    expect(patched.status, patched.raw).toBe(200);
    expect(patched.body.options).toMatchObject({ approval: 'destructive' });
    const notDestructive = call({ text: 'harmless' });
    expect((await notDestructive.result).status).toBe('succeeded');
    // required on the tool itself.
    await api('PATCH', '/tools/builtin.echo', { options: { approval: 'required' } });
    const held = call({ text: 'held' });
    const pending = await pendingOf(held.toolCallId);
    expect((await api('GET', `/approvals/${pending.approval_id}`)).body.required_by).toEqual({
      source: 'tool',
      mode: 'required',
    });
    await api('POST', `/approvals/${pending.approval_id}/approve`, {});
    expect((await held.result).status).toBe('succeeded');
    // A reserved tool takes no other option.
    const refused = await api('PATCH', '/tools/builtin.echo', {
      options: { timeout_ms: 5 },
    });
    expect(refused.status).toBe(400);
    await api('PATCH', '/tools/builtin.echo', { options: {} });
    await api('PUT', '/targets/builtin/approval', { approval: 'required' });
  });

  it("another project's key can neither see nor decide them", async () => {
    const { toolCallId, result } = call({ text: 'mine' });
    const pending = await pendingOf(toolCallId);
    const id = pending.approval_id;
    const foreign = (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown) =>
      mesh.api.request(method, `/v1/projects/${mesh.project.id}${path}`, {
        key: other.key,
        body,
      });
    for (const [method, path, body] of [
      ['GET', '/approvals', undefined],
      ['GET', `/approvals/${id}`, undefined],
      ['POST', `/approvals/${id}/approve`, {}],
      ['POST', `/approvals/${id}/deny`, { reason: 'mine now' }],
      ['GET', '/targets/approvals', undefined],
      ['PUT', '/targets/builtin/approval', { approval: 'required' }],
      ['DELETE', '/targets/builtin/approval', undefined],
    ] as const) {
      const r = await foreign(method, path, body);
      expect(r.status, `${method} ${path}: ${r.raw}`).toBe(404);
    }
    // Its own project has no such approval either.
    const own = await api('GET', `/approvals/${id}`, undefined, other);
    expect(own.status).toBe(404);
    expect((await api('GET', '/approvals', undefined, other)).body.approvals).toEqual([]);
    expect((await api('GET', `/approvals/${id}`)).body.status).toBe('pending');
    await api('POST', `/approvals/${id}/deny`, { reason: 'done testing' });
    expect((await result).content.error?.code).toBe('approval_denied');
  });

  it('toolmesh approvals list, approve and deny', async () => {
    const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
    const env = {
      TOOLMESH_API_URL: address,
      TOOLMESH_API_KEY: mesh.project.key,
      TOOLMESH_PROJECT: mesh.project.id,
    };
    const first = call({ text: 'by cli' });
    const second = call({ text: 'also by cli' });
    await pendingOf(first.toolCallId);
    await pendingOf(second.toolCallId);
    const listed = await runToolmesh(['approvals', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const rows = JSON.parse(listed.stdout).approvals as {
      approval_id: string;
      tool_call_id: string;
      arguments: unknown;
    }[];
    const a = rows.find((r) => r.tool_call_id === first.toolCallId)!;
    const b = rows.find((r) => r.tool_call_id === second.toolCallId)!;
    expect(a.arguments).toEqual({ text: 'by cli' });
    const table = await runToolmesh(['approvals', 'list'], env);
    expect(table.stdout).toContain(a.approval_id);

    const approved = await runToolmesh(['approvals', 'approve', a.approval_id], env);
    expect(approved.code, approved.stderr).toBe(0);
    expect(approved.stdout).toContain('approved');
    expect((await first.result).status).toBe('succeeded');

    const noReason = await runToolmesh(['approvals', 'deny', b.approval_id], env);
    expect(noReason.code).not.toBe(0);
    const denied = await runToolmesh(
      ['approvals', 'deny', b.approval_id, '--reason', 'wrong window'],
      env,
    );
    expect(denied.code, denied.stderr).toBe(0);
    const r = await second.result;
    expect(r.content.error).toMatchObject({
      code: 'approval_denied',
      details: { reason: 'wrong window' },
    });
    // Another project's key gets not_found from the CLI too.
    const foreign = await runToolmesh(['approvals', 'approve', a.approval_id], {
      ...env,
      TOOLMESH_API_KEY: other.key,
    });
    expect(foreign.code).not.toBe(0);
    expect(foreign.stderr).toContain('404');
  });
});
