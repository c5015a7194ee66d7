// Every way a call can be wrong ends with a failed result carrying its own error code (or, for
// an id that cannot be trusted, a clear rejection before anything is published), and the
// service keeps serving afterwards. Deadlines end calls `timeout`, cancels end them `canceled`.
import { jetstream } from '@nats-io/jetstream';
import { headers } from '@nats-io/transport-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Header, errorCodeOf } from '@toolmesh/protocol';
import { startMesh, type Mesh } from './support/mesh.ts';
import { collectResults, type ResultCollector } from './support/results.ts';

const scope = { project: 'proj-f', channel: 'main' };
let mesh: Mesh;
let results: ResultCollector;

beforeAll(async () => {
  mesh = await startMesh({
    CG__TOOLS__MAX_CALL_BYTES: '4096',
    CG__TOOLS__MAX_TIMEOUT_MS: '600000',
  });
  await mesh.startService();
  // The project's command stream, as the api makes it when the project is created.
  await mesh.nats.provisionProject(scope.project);
  results = await collectResults(mesh.nc, mesh.client.subjects, scope);
});
afterAll(async () => {
  results?.close();
  await mesh?.close();
});

let n = 0;
async function publishRaw(opts: {
  tool?: string;
  body: string | Record<string, unknown>;
  headerId?: string;
  project?: string;
  agentId?: string;
}): Promise<void> {
  const h = headers();
  if (opts.headerId) h.set(Header.toolCallId, opts.headerId);
  if (opts.agentId) h.set(Header.agentId, opts.agentId);
  const [target, tool] = (opts.tool ?? 'builtin.echo').split('.') as [string, string];
  const subject = opts.project
    ? `${mesh.client.subjects.root}.v1.${opts.project}.${scope.channel}.cmd.tool.${target}.${tool}`
    : mesh.client.subjects.toolCall({ ...scope, target, tool });
  const data = typeof opts.body === 'string' ? opts.body : JSON.stringify(opts.body);
  await jetstream(mesh.nc).publish(subject, data, {
    headers: h,
    msgID: `raw-${++n}-${Date.now()}`,
  });
}

async function expectFailure(id: string, code: string) {
  const ev = await results.waitFor(id);
  expect(ev.status).toBe('failed');
  expect(ev.content.error?.code).toBe(code);
  expect(ev.content.error?.message.length).toBeGreaterThan(0);
  const card = await mesh.store.cards.toolResult(scope.project, id);
  expect(card?.card_id).toBe(ev.card_id);
  return ev;
}

const call = (id: string, extra: Record<string, unknown> = {}) => ({
  v: 1,
  tool_call_id: id,
  tool_name: 'builtin.echo',
  arguments: {},
  ...extra,
});

describe('bad input gets a failed result with its own code', () => {
  it('unknown tool', async () => {
    await publishRaw({
      tool: 'builtin.nope',
      body: call('unknown-1', { tool_name: 'builtin.nope' }),
    });
    const ev = await expectFailure('unknown-1', 'unknown_tool');
    expect(ev.content.error?.details?.['known']).toEqual([
      'builtin.echo',
      'builtin.sleep',
      'builtin.execute_python',
      'builtin.read_file',
      'builtin.write_file',
      'builtin.list_files',
      'builtin.search_documents',
      'builtin.get_document',
    ]);
  });

  it('malformed JSON, filed under the header id', async () => {
    await publishRaw({ body: '{"v":1, "tool_call_id": ', headerId: 'malformed-1' });
    await expectFailure('malformed-1', 'malformed_json');
  });

  it('arguments that fail the schema', async () => {
    await publishRaw({
      tool: 'builtin.sleep',
      body: call('badargs-1', { tool_name: 'builtin.sleep', arguments: { ms: 'soon' } }),
    });
    const ev = await expectFailure('badargs-1', 'invalid_arguments');
    expect(ev.content.error?.message).toContain('ms');
  });

  it('an unknown field in the body', async () => {
    await publishRaw({ body: call('unknown-field-1', { project: 'other' }) });
    await expectFailure('unknown-field-1', 'invalid_message');
  });

  it('an unsupported message version', async () => {
    await publishRaw({ body: call('version-1', { v: 2 }) });
    await expectFailure('version-1', 'unsupported_version');
  });

  it('a tool call id with characters outside [A-Za-z0-9_-]', async () => {
    await publishRaw({ body: call('bad$id'), headerId: 'badid-hdr-1' });
    await expectFailure('badid-hdr-1', 'invalid_id');
  });

  it('a payload over the size limit', async () => {
    await publishRaw({ body: call('big-1', { arguments: { blob: 'x'.repeat(8_000) } }) });
    const ev = await expectFailure('big-1', 'payload_too_large');
    expect(ev.content.error?.details).toMatchObject({ limit_bytes: 4096 });
  });

  it('header and body ids that disagree', async () => {
    await publishRaw({ body: call('body-id-1'), headerId: 'header-id-1' });
    await expectFailure('body-id-1', 'id_mismatch');
  });

  it('a body naming another tool than its subject', async () => {
    await publishRaw({
      tool: 'builtin.echo',
      body: call('name-1', { tool_name: 'builtin.sleep' }),
    });
    await expectFailure('name-1', 'id_mismatch');
  });

  it('a timeout above the limit', async () => {
    await publishRaw({ body: call('too-long-1', { timeout_ms: 10 * 3_600_000 }) });
    await expectFailure('too-long-1', 'invalid_message');
  });

  it('a tool token outside [A-Za-z0-9_-] in the subject', async () => {
    await publishRaw({
      project: scope.project,
      tool: 'builtin.ec$ho',
      body: call('badtool-1', { tool_name: 'builtin.ec$ho' }),
    });
    await expectFailure('badtool-1', 'invalid_id');
  });

  it('a failed call wakes the agent that made it', async () => {
    const wakeups: string[] = [];
    const sub = mesh.nc.subscribe(
      mesh.client.subjects.agentWakeup({ ...scope, agent: 'agent-7' }),
      {
        callback: (_e, m) => {
          wakeups.push(m.string());
        },
      },
    );
    await mesh.nc.flush();
    await publishRaw({ body: '{"v": 1,', headerId: 'agent-call-1', agentId: 'agent-7' });
    await expectFailure('agent-call-1', 'malformed_json');
    const inbox = await mesh.store.inbox.pending(scope.project, 'agent-7');
    expect(inbox.map((i) => i.correlation_id)).toEqual(['agent-call-1']);
    for (let i = 0; i < 50 && wakeups.length === 0; i++)
      await new Promise((r) => setTimeout(r, 20));
    sub.unsubscribe();
    expect(JSON.parse(wakeups[0]!)).toMatchObject({
      agent_id: 'agent-7',
      reason: 'tool_result',
      correlation_id: 'agent-call-1',
    });
  });

  it('a valid call reusing the id of a rejected one gets the rejection, and does not run', async () => {
    await publishRaw({
      tool: 'builtin.sleep',
      body: call('reuse-1', { tool_name: 'builtin.sleep', arguments: {} }),
    });
    const rejected = await expectFailure('reuse-1', 'invalid_arguments');
    const again = await mesh.client.callTool({
      ...scope,
      tool: 'builtin.sleep',
      toolCallId: 'reuse-1',
      arguments: { ms: 1 },
    });
    expect(again.card_id).toBe(rejected.card_id);
    expect(again.status).toBe('failed');
    expect((await mesh.store.executions.get(scope.project, 'reuse-1'))?.status).toBe('failed');
  });

  it('a result Postgres cannot store (a NUL character) fails with internal_error instead of looping', async () => {
    const r = await mesh.client.callTool(
      { ...scope, tool: 'builtin.echo', arguments: { text: 'a\u0000b' } },
      { waitMs: 10_000 },
    );
    expect(r.status).toBe('failed');
    expect(r.content.error?.code).toBe('internal_error');
    expect(r.content.error?.message).toContain('could not be stored');
  });

  it('a tool whose own default deadline exceeds the limit is clamped, not refused', async () => {
    const r = await mesh.client.callTool({ ...scope, tool: 'builtin.sleep', arguments: { ms: 5 } });
    expect(r.status).toBe('succeeded');
  });

  it('a project id outside [A-Za-z0-9_-] is refused by the client before publishing', async () => {
    const err: unknown = await mesh.client
      .callTool({ project: 'pro$ject', channel: 'main', tool: 'builtin.echo' })
      .catch((e: unknown) => e);
    expect(errorCodeOf(err)).toBe('invalid_id');
    expect((err as Error).message).toContain('project');
  });

  it('keeps serving after all of that; a raw call on an invalid project subject is stored nowhere', async () => {
    // No project has that name, so no command stream takes it: refused at the publish.
    // (nats.js words the server's "no responders" to a JetStream publish this way)
    await expect(publishRaw({ project: 'pro$ject', body: call('edge-1') })).rejects.toThrow(
      /no responders|jetstream is not enabled/,
    );
    const ok = await mesh.client.callTool({
      ...scope,
      tool: 'builtin.echo',
      arguments: { still: 'here' },
    });
    expect(ok.status).toBe('succeeded');
    expect(ok.content.result).toEqual({ still: 'here' });
    expect(results.events.find((e) => e.tool_call_id === 'edge-1')).toBeUndefined();
  });
});

describe('deadlines and cancel', () => {
  it('a call that outlives its deadline ends timeout', async () => {
    // Left to run, the sleep takes 50 minutes: a result at all, within the test's timeout,
    // shows the deadline ended it (no stopwatch on its duration).
    const r = await mesh.client.callTool(
      { ...scope, tool: 'builtin.sleep', arguments: { ms: 3_000_000 }, timeoutMs: 300 },
      { waitMs: 60_000 },
    );
    expect(r.status).toBe('timeout');
    expect(r.content.error?.code).toBe('timeout');
    const exec = await mesh.store.executions.get(scope.project, r.tool_call_id);
    expect(exec?.status).toBe('timeout');
  }, 90_000);

  it('builtin.sleep cancelled mid-way ends canceled', async () => {
    const toolCallId = `cancel-${Date.now()}`;
    const pending = mesh.client.callTool({
      ...scope,
      tool: 'builtin.sleep',
      toolCallId,
      arguments: { ms: 30_000 },
    });
    // Wait until the call is running before canceling it.
    for (let i = 0; i < 100; i++) {
      if ((await mesh.store.executions.get(scope.project, toolCallId))?.status === 'running') break;
      await new Promise((r) => setTimeout(r, 50));
    }
    await mesh.client.cancel({ ...scope, toolCallId, reason: 'test' });
    const r = await pending;
    expect(r.status).toBe('canceled');
    expect(r.content.error?.code).toBe('canceled');
    expect((await mesh.store.executions.get(scope.project, toolCallId))?.status).toBe('canceled');
  });

  it('a call canceled before it arrives ends canceled without running', async () => {
    const toolCallId = `precancel-${Date.now()}`;
    await mesh.client.cancel({ ...scope, toolCallId, reason: 'changed my mind' });
    // A 50-minute sleep: had it started, no result would come within the test's timeout.
    const r = await mesh.client.callTool(
      { ...scope, tool: 'builtin.sleep', toolCallId, arguments: { ms: 3_000_000 } },
      { waitMs: 60_000 },
    );
    expect(r.status).toBe('canceled');
    expect(r.content.error?.message).toContain('changed my mind');
    expect(r.content.result).toBeUndefined();
  }, 90_000);
});
