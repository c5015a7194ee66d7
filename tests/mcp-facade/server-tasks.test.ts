// Tasks of an MCP server through its own endpoint on 2026-07-28 (docs/mcp.md, "MCP Tasks on
// 2026-07-28"): the server decides which call is a task, and the mesh's durable task stands for
// it: the task id is the tool_call_id, the call went over the bus and left one card, and what the
// server's task asks waits as a durable input request that the task's client (tasks/update) or
// anyone of the project (the HTTP API) answers. Another project neither sees nor answers any of
// it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonRpcResponse } from '@modelcontextprotocol/ext-tasks/client';
import { startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import type { ToolsService } from '../../services/tools/src/app.ts';
import {
  modernDispatch,
  registerMcpServers,
  startFacadeMeshWithTools,
  type FacadeMesh,
} from './support.ts';

const TASKS = 'io.modelcontextprotocol/tasks';

let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let tools: ToolsService;
let other: { id: string; key: string };
/** A project whose calls of `everything` wait for a human approval. */
let guarded: { id: string; key: string };
beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  guarded = await mesh.api.createProject();
  await registerMcpServers(mesh, 'everything', [
    [mesh.project, fixture.url],
    [other, fixture.url],
    [guarded, fixture.url],
  ]);
  const res = await mesh.api.request(
    'PUT',
    `/v1/projects/${guarded.id}/targets/everything/approval`,
    { key: guarded.key, body: { approval: 'required' } },
  );
  if (res.status !== 200) throw new Error(`requiring approval failed: ${res.raw}`);
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await fixture?.stop();
  await mesh?.close();
});

/** A request of the revision declaring the tasks extension (and elicitation). */
function framed(method: string, params: Record<string, unknown>) {
  return {
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'server-tasks-test', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': {
          elicitation: {},
          extensions: { [TASKS]: {} },
        },
      },
    },
  };
}

function result(r: JsonRpcResponse): Record<string, any> {
  if (r.kind !== 'result') throw new Error(`an error: ${JSON.stringify(r.error)}`);
  return r.result as Record<string, any>;
}

/** The endpoint of `everything` of a project, as `key`. */
function endpoint(project = mesh.project, key = project.key) {
  const raw = modernDispatch(mesh.serverUrl(project.id, 'everything'), key);
  return {
    call: (name: string, args: Record<string, unknown> = {}) =>
      raw(framed('tools/call', { name, arguments: args })),
    task: (method: string, taskId: string, extra: Record<string, unknown> = {}) =>
      raw(framed(method, { taskId, ...extra }), { context: { headers: { 'mcp-name': taskId } } }),
  };
}

async function statusOf(taskId: string, wanted: string): Promise<Record<string, any>> {
  const ep = endpoint();
  let task: Record<string, any> = {};
  await expect
    .poll(
      async () => {
        task = result(await ep.task('tasks/get', taskId));
        return task['status'] as string;
      },
      { timeout: 20_000 },
    )
    .toBe(wanted);
  return task;
}

describe("an MCP server's tasks at its own endpoint (2026-07-28)", () => {
  it("the server's task is the mesh's durable task: one call, one card, the server's result", async () => {
    const created = result(await endpoint().call('slow_compute', { seconds: 0.2, label: 'x' }));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created['taskId'] as string;
    expect(await mesh.api.store.mcpTasks.get(mesh.project.id, taskId)).toBeDefined();
    const done = await statusOf(taskId, 'completed');
    expect(done['result']).toMatchObject({
      content: [{ type: 'text', text: 'computed x after 0.2s' }],
    });
    expect(await mesh.api.store.executions.get(mesh.project.id, taskId)).toMatchObject({
      tool_name: 'everything.slow_compute',
      channel: 'mcp',
      status: 'succeeded',
      attempts: 1,
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, taskId)).toBe(1);
  });

  it('a keyed re-send of a call its server made a task is that task, run once', async () => {
    const ep = modernDispatch(mesh.serverUrl(mesh.project.id, 'everything'), mesh.project.key);
    const send = () => {
      const f = framed('tools/call', { name: 'slow_compute', arguments: { seconds: 1 } });
      (f.params._meta as Record<string, unknown>)['io.toolmesh/idempotency-key'] =
        'server-task-once';
      return ep(f);
    };
    const first = result(await send());
    const again = result(await send());
    expect(again).toMatchObject({ resultType: 'task', taskId: first['taskId'] });
    await statusOf(first['taskId'] as string, 'completed');
    expect(
      await mesh.api.store.executions.get(mesh.project.id, first['taskId'] as string),
    ).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('a call the server answers at once stays an answer, not a task', async () => {
    const res = result(await endpoint().call('greet', { name: 'mesh' }));
    expect(res['taskId']).toBeUndefined();
    expect(res['content']).toEqual([{ type: 'text', text: 'Hello, mesh!' }]);
    const id = res['_meta']['io.toolmesh/tool-call-id'] as string;
    expect(await mesh.api.store.mcpTasks.get(mesh.project.id, id)).toBeUndefined();
  });

  it("what the server's task asks waits as an input request; another project reaches none of it", async () => {
    const taskId = result(await endpoint().call('confirm_delete', { filename: 'a.txt' }))[
      'taskId'
    ] as string;
    const waiting = await statusOf(taskId, 'input_required');
    const [requestId, request] = Object.entries(
      waiting['inputRequests'] as Record<string, any>,
    )[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { message: 'Delete a.txt?' },
    });
    const row = await mesh.api.request(
      'GET',
      `/v1/projects/${mesh.project.id}/input-requests/${requestId}`,
      { key: mesh.project.key },
    );
    expect(row.body).toMatchObject({ tool_call_id: taskId, status: 'pending' });

    // Another project: not through its own endpoint of the same server, not over HTTP.
    const theirs = endpoint(other);
    expect((await theirs.task('tasks/get', taskId)).kind).toBe('error');
    const update = await theirs.task('tasks/update', taskId, {
      inputResponses: { [requestId]: { action: 'accept', content: { confirm: true } } },
    });
    expect(update.kind).toBe('error');
    expect((await theirs.task('tasks/cancel', taskId)).kind).toBe('error');
    const answer = await mesh.api.request(
      'POST',
      `/v1/projects/${other.id}/input-requests/${requestId}/answer`,
      { key: other.key, body: { action: 'accept', content: { confirm: true } } },
    );
    expect(answer.status).toBe(404);
    expect((await endpoint(mesh.project, other.key).task('tasks/get', taskId)).kind).toBe('error');
    expect((await statusOf(taskId, 'input_required'))['inputRequests']).toHaveProperty(requestId);

    // Anyone of the project answers it over HTTP; the server's task goes on to its end.
    const ok = await mesh.api.request(
      'POST',
      `/v1/projects/${mesh.project.id}/input-requests/${requestId}/answer`,
      { key: mesh.project.key, body: { action: 'accept', content: { confirm: true } } },
    );
    expect(ok.status).toBe(200);
    const done = await statusOf(taskId, 'completed');
    expect(done['result']['content']).toEqual([{ type: 'text', text: 'Deleted a.txt' }]);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, taskId)).toBe(1);
  });

  it("tasks/update checks an answer against the server's form", async () => {
    const ep = endpoint();
    const taskId = result(await ep.call('confirm_delete', { filename: 'b.txt' }))[
      'taskId'
    ] as string;
    const waiting = await statusOf(taskId, 'input_required');
    const requestId = Object.keys(waiting['inputRequests'] as object)[0]!;
    const wrong = await ep.task('tasks/update', taskId, {
      inputResponses: { [requestId]: { action: 'accept', content: { confirm: 'yes' } } },
    });
    expect(wrong).toMatchObject({ kind: 'error', error: { code: -32602 } });
    const declined = await ep.task('tasks/update', taskId, {
      inputResponses: { [requestId]: { action: 'decline' } },
    });
    expect(declined.kind).toBe('result');
    const done = await statusOf(taskId, 'completed');
    expect(done['result']['content']).toEqual([{ type: 'text', text: 'Kept b.txt' }]);
  });

  it("tasks/cancel cancels the call on the mesh and the server's task", async () => {
    const ep = endpoint();
    const taskId = result(await ep.call('slow_compute', { seconds: 60 }))['taskId'] as string;
    await expect
      .poll(async () => (await mesh.api.store.executions.get(mesh.project.id, taskId))?.status)
      .toBe('running');
    const sent = fixture.methods.filter((m) => m === 'tasks/cancel').length;
    expect(result(await ep.task('tasks/cancel', taskId))).not.toHaveProperty('status');
    await statusOf(taskId, 'cancelled');
    expect((await mesh.api.store.executions.get(mesh.project.id, taskId))?.status).toBe('canceled');
    await expect
      .poll(() => fixture.methods.filter((m) => m === 'tasks/cancel').length)
      .toBeGreaterThan(sent);
  });

  it('a call that waits for an approval is a task too, decided by tasks/update', async () => {
    const ep = endpoint(guarded);
    const created = result(await ep.call('greet', { name: 'approved' }));
    expect(created).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = created['taskId'] as string;
    let task: Record<string, any> = {};
    await expect
      .poll(
        async () => {
          task = result(await ep.task('tasks/get', taskId));
          return task['status'] as string;
        },
        { timeout: 20_000 },
      )
      .toBe('input_required');
    const approvalId = Object.keys(task['inputRequests'] as object)[0]!;
    expect(await mesh.api.store.approvals.get(guarded.id, approvalId)).toMatchObject({
      status: 'pending',
      tool_name: 'everything.greet',
    });
    await ep.task('tasks/update', taskId, {
      inputResponses: { [approvalId]: { action: 'accept', content: { approve: true } } },
    });
    await expect
      .poll(async () => result(await ep.task('tasks/get', taskId))['status'] as string, {
        timeout: 20_000,
      })
      .toBe('completed');
    expect(result(await ep.task('tasks/get', taskId))['result']['content']).toEqual([
      { type: 'text', text: 'Hello, approved!' },
    ]);
  });

  it("a server's protocol error fails the task with the server's error", async () => {
    const taskId = result(await endpoint().call('protocol_error_job'))['taskId'] as string;
    const failed = await statusOf(taskId, 'failed');
    expect(failed['error']).toMatchObject({ code: -32603, message: 'the job crashed' });
    expect(failed).not.toHaveProperty('result');
  });
});
