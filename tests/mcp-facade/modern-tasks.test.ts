// MCP Tasks on the 2026-07-28 revision (the io.modelcontextprotocol/tasks extension), driven by the
// Tasks requester of @modelcontextprotocol/ext-tasks over the 2.x client: advertised in
// server/discover; a task only when the request declares the extension; tasks/get with the
// result or the outcome; tasks/update of a task that asks for nothing acknowledged and ignored
// (SEP-2663); tasks/* without the extension -32021; tasks/cancel; another
// project's key refused; and the task view expiring after its ttl while the card stays readable.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import {
  createTaskSessionFromClient,
  resultFromTaskOutcome,
  type JsonRpcResponse,
} from '@modelcontextprotocol/ext-tasks/client';
import { modernDispatch, startFacadeMesh, type FacadeMesh } from './support.ts';

const TASKS = 'io.modelcontextprotocol/tasks';
const TTL_MS = 3_000;

let mesh: FacadeMesh;
const clients: Client[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh({ CG__API__MCP_TASK_TTL_MS: String(TTL_MS) });
});
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

async function modern(key = mesh.project.key, project = mesh.project.id): Promise<Client> {
  const client = new Client(
    { name: 'modern-tasks-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  clients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(project), {
      requestInit: { headers: { authorization: `Bearer ${key}` } },
    }),
  );
  return client;
}

async function session() {
  const client = await modern();
  return createTaskSessionFromClient(client, {
    endpointId: 'toolmesh-modern',
    rawDispatch: modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key),
    v2RequestFraming: {
      protocolVersion: '2026-07-28',
      clientInfo: { name: 'modern-tasks-test', version: '1.0.0' },
      clientCapabilities: {},
    },
  });
}

/** A raw request of the revision declaring the tasks extension, as a requester frames it. */
function framed(method: string, params: Record<string, unknown>) {
  return {
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': { extensions: { [TASKS]: {} } },
      },
    },
  };
}

/** A string field of a successful answer. */
function field(res: JsonRpcResponse, name: string): string {
  if (res.kind !== 'result') throw new Error(`an error: ${res.error.message}`);
  const v = (res.result as Record<string, unknown>)[name];
  if (typeof v !== 'string') throw new Error(`no ${name} in ${JSON.stringify(res.result)}`);
  return v;
}

const taskHeaders = (taskId: string) => ({ context: { headers: { 'mcp-name': taskId } } });

describe('2026-07-28 tasks (io.modelcontextprotocol/tasks)', () => {
  it('advertises the extension in server/discover', async () => {
    const client = await modern();
    expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
    expect(client.getServerCapabilities()?.extensions).toMatchObject({ [TASKS]: {} });
  });

  it('runs a tool as a task through the ext-tasks requester and settles it from the card', async () => {
    const s = await session();
    try {
      const execution = await s.callTool(
        'builtin__sleep',
        { ms: 300 },
        { task: { preference: 'require' } },
      );
      const { outcome, lastTask } = await execution.settle();
      expect(outcome.status).toBe('completed');
      const result = resultFromTaskOutcome(outcome) as { structuredContent?: unknown };
      expect(result.structuredContent).toMatchObject({ slept_ms: expect.any(Number) });
      const taskId = lastTask?.taskId ?? outcome.task?.taskId;
      // The task id is the execution's id, and the execution succeeded once.
      const row = await mesh.api.store.executions.get(mesh.project.id, taskId!);
      expect(row).toMatchObject({ tool_name: 'builtin.sleep', status: 'succeeded', attempts: 1 });
    } finally {
      await s.close();
    }
  });

  it('creates no task when the request does not declare the extension', async () => {
    const client = await modern();
    const res = await client.callTool({ name: 'builtin__echo', arguments: { plain: true } });
    expect(res.structuredContent).toEqual({ plain: true });
    const id = res._meta?.['io.toolmesh/tool-call-id'] as string;
    expect(await mesh.api.store.mcpTasks.get(mesh.project.id, id)).toBeUndefined();
  });

  it('tasks/get answers a failed call with its isError result; tasks/update changes nothing', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = await raw(
      framed('tools/call', {
        name: 'skills__job_status',
        arguments: { job_id: '018f0000-0000-7000-8000-000000000000' },
      }),
    );
    expect(created).toMatchObject({
      kind: 'result',
      result: { resultType: 'task', status: 'working', ttlMs: TTL_MS, pollIntervalMs: 500 },
    });
    const taskId = field(created, 'taskId');
    await expect
      .poll(async () => {
        const got = await raw(framed('tasks/get', { taskId }), taskHeaders(taskId));
        return got.kind === 'result' ? field(got, 'status') : got.error.message;
      })
      .toBe('completed');
    const got = await raw(framed('tasks/get', { taskId }), taskHeaders(taskId));
    expect(got).toMatchObject({
      kind: 'result',
      result: { taskId, status: 'completed', result: { isError: true, resultType: 'complete' } },
    });
    const update = await raw(
      framed('tasks/update', { taskId, inputResponses: { a: { action: 'accept' } } }),
      taskHeaders(taskId),
    );
    expect(update).toMatchObject({ kind: 'result' });
    expect(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId))).toEqual(got);
  });

  it('tasks/get, tasks/update and tasks/cancel without the extension are -32021', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = await raw(
      framed('tools/call', { name: 'builtin__sleep', arguments: { ms: 60_000 } }),
    );
    const taskId = field(created, 'taskId');
    const without = (method: string, params: Record<string, unknown>) => {
      const f = framed(method, params);
      const meta = f.params._meta as Record<string, unknown>;
      meta['io.modelcontextprotocol/clientCapabilities'] = {};
      return raw(f, taskHeaders(taskId));
    };
    for (const [method, params] of [
      ['tasks/get', { taskId }],
      ['tasks/update', { taskId, inputResponses: {} }],
      ['tasks/cancel', { taskId }],
    ] as const) {
      expect(await without(method, params)).toMatchObject({
        kind: 'error',
        error: {
          code: -32021,
          data: { requiredCapabilities: { extensions: { [TASKS]: {} } } },
        },
      });
    }
    // The refused cancel left the call running.
    expect((await mesh.api.store.executions.get(mesh.project.id, taskId))?.status).not.toBe(
      'canceled',
    );
    await raw(framed('tasks/cancel', { taskId }), taskHeaders(taskId));
  });

  it('tasks/cancel cancels the call on the mesh', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = await raw(
      framed('tools/call', { name: 'builtin__sleep', arguments: { ms: 60_000 } }),
    );
    const taskId = field(created, 'taskId');
    await expect
      .poll(async () => (await mesh.api.store.executions.get(mesh.project.id, taskId))?.status)
      .toBe('running');
    expect(await raw(framed('tasks/cancel', { taskId }), taskHeaders(taskId))).toMatchObject({
      kind: 'result',
    });
    expect((await mesh.api.store.executions.get(mesh.project.id, taskId))?.status).toBe('canceled');
    const got = await raw(framed('tasks/get', { taskId }), taskHeaders(taskId));
    expect(got).toMatchObject({ kind: 'result', result: { status: 'cancelled' } });
  });

  it("refuses another project's key for a task", async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = await raw(framed('tools/call', { name: 'builtin__echo', arguments: { o: 1 } }));
    const taskId = field(created, 'taskId');
    const other = await mesh.api.createProject();
    // Their key on our URL: 404 as for anything of another project.
    const res = await fetch(mesh.mcpUrl(mesh.project.id), {
      method: 'POST',
      headers: {
        authorization: `Bearer ${other.key}`,
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': '2026-07-28',
        'mcp-method': 'tasks/get',
        'mcp-name': taskId,
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, ...framed('tasks/get', { taskId }) }),
    });
    expect(res.status).toBe(404);
    // Their own URL does not know the task.
    const theirs = modernDispatch(mesh.mcpUrl(other.id), other.key);
    expect(await theirs(framed('tasks/get', { taskId }), taskHeaders(taskId))).toMatchObject({
      kind: 'error',
      error: { code: -32602, message: `Task not found: ${taskId}` },
    });
  });

  it('the task view expires after its ttl; the card stays readable over HTTP', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = await raw(framed('tools/call', { name: 'builtin__echo', arguments: { e: 1 } }));
    const taskId = field(created, 'taskId');
    expect(created).toMatchObject({ result: { ttlMs: TTL_MS } });
    await expect
      .poll(async () => (await raw(framed('tasks/get', { taskId }), taskHeaders(taskId))).kind, {
        timeout: TTL_MS + 5_000,
        interval: 500,
      })
      .toBe('error');
    expect(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId))).toMatchObject({
      kind: 'error',
      error: { code: -32602, message: `Task not found: ${taskId}` },
    });
    const res = await mesh.api.request(
      'GET',
      `/v1/projects/${mesh.project.id}/executions/${taskId}`,
      { key: mesh.project.key },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      execution: { status: 'succeeded' },
      card: { content: { result: { e: 1 } } },
    });
  });
});
