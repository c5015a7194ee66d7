// MCP Tasks (2025-11-25 experimental form, the 1.x SDK's client): a tools/call with `task` returns
// a task whose id is the call's tool_call_id, recorded before it is returned. tasks/get, the
// blocking tasks/result, tasks/list and tasks/cancel read the execution and its card, so another
// api instance answers them after the one that created the task was killed (SIGKILL).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CallToolResultSchema, CreateTaskResultSchema } from '@modelcontextprotocol/sdk/types.js';
import type { ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import { join } from 'node:path';
import { freePort } from '@toolmesh/testing';
import { spawnReady } from '../support/procs.ts';
import { modernDispatch, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh();
});
afterAll(async () => mesh?.close());

const createTask = (client: Client, name: string, args: Record<string, unknown>, meta = {}) =>
  client.request(
    { method: 'tools/call', params: { name, arguments: args, task: { ttl: 60_000 }, _meta: meta } },
    CreateTaskResultSchema,
  );

/** A second api as its own process on the same NATS root and database (SIGKILL-able). */
async function spawnApi(): Promise<{ child: ChildProcess; url: string }> {
  const port = await freePort();
  const child = await spawnReady(
    join(import.meta.dirname, '..', '..', 'services/api/src/main.ts'),
    { ...mesh.api.env, CG__API__PORT: String(port), CG__LOG__LEVEL: 'info' },
    'api listening',
    'api',
  );
  return { child, url: `http://127.0.0.1:${port}` };
}

async function connectTo(base: string): Promise<Client> {
  const client = new Client({ name: 'tasks-test', version: '1.0.0' });
  await client.connect(
    new StreamableHTTPClientTransport(new URL(`${base}/v1/projects/${mesh.project.id}/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  return client;
}

describe('MCP tasks', () => {
  it('advertises tasks and per-tool task support', async () => {
    const client = await mesh.connect();
    expect(client.getServerCapabilities()?.tasks).toMatchObject({
      list: {},
      cancel: {},
      requests: { tools: { call: {} } },
    });
    const { tools } = await client.listTools();
    expect(tools.find((t) => t.name === 'builtin__sleep')?.execution).toEqual({
      taskSupport: 'optional',
    });
  });

  it('creates a task that outlives the instance that created it', async () => {
    const other = await spawnApi();
    const creator = await connectTo(other.url);
    const { task } = await createTask(creator, 'builtin__sleep', { ms: 1_500 });
    expect(task).toMatchObject({ status: 'working', ttl: 60_000, pollInterval: 500 });
    // The task id is the execution's id, recorded before the answer.
    const row = await mesh.api.store.executions.get(mesh.project.id, task.taskId);
    expect(row?.tool_name).toBe('builtin.sleep');
    // The creating instance dies without a word.
    other.child.kill('SIGKILL');
    await once(other.child, 'exit');
    await creator.close().catch(() => undefined);

    const reader = await mesh.connect();
    const got = await reader.experimental.tasks.getTask(task.taskId);
    expect(got).toMatchObject({ taskId: task.taskId, status: 'working' });
    // Blocks until the call is done, then answers from its card.
    const result = await reader.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ slept_ms: expect.any(Number) });
    expect(await reader.experimental.tasks.getTask(task.taskId)).toMatchObject({
      status: 'completed',
    });
    const { tasks } = await reader.experimental.tasks.listTasks();
    expect(tasks.map((t) => t.taskId)).toContain(task.taskId);
  }, 120_000);

  it('a 2026-07-28 task outlives the instance that created it', async () => {
    const other = await spawnApi();
    const url = (base: string) => new URL(`${base}/v1/projects/${mesh.project.id}/mcp`);
    const meta = {
      'io.modelcontextprotocol/protocolVersion': '2026-07-28',
      'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
      'io.modelcontextprotocol/clientCapabilities': {
        extensions: { 'io.modelcontextprotocol/tasks': {} },
      },
    };
    const created = await modernDispatch(
      url(other.url),
      mesh.project.key,
    )({
      method: 'tools/call',
      params: { name: 'builtin__sleep', arguments: { ms: 1_500 }, _meta: meta },
    });
    expect(created).toMatchObject({ kind: 'result', result: { resultType: 'task' } });
    const taskId = (created.kind === 'result' &&
      (created.result as { taskId?: unknown }).taskId) as string;
    other.child.kill('SIGKILL');
    await once(other.child, 'exit');

    const reader = modernDispatch(url(mesh.baseUrl), mesh.project.key);
    const get = () =>
      reader(
        { method: 'tasks/get', params: { taskId, _meta: meta } },
        { context: { headers: { 'mcp-name': taskId } } },
      );
    await expect
      .poll(
        async () => {
          const got = await get();
          return got.kind === 'result' ? (got.result as { status?: unknown }).status : got.kind;
        },
        { timeout: 10_000, interval: 250 },
      )
      .toBe('completed');
    expect(await get()).toMatchObject({
      kind: 'result',
      result: { taskId, result: { structuredContent: { slept_ms: expect.any(Number) } } },
    });
    const cancelled = await reader(
      { method: 'tasks/cancel', params: { taskId, _meta: meta } },
      { context: { headers: { 'mcp-name': taskId } } },
    );
    // Cancelling a finished task changes nothing: the card stays the answer.
    expect(cancelled.kind).toBe('result');
    expect((await mesh.api.store.executions.get(mesh.project.id, taskId))?.status).toBe(
      'succeeded',
    );
  }, 120_000);

  it('a failed call is a failed task whose result is isError', async () => {
    const client = await mesh.connect();
    const { task } = await createTask(client, 'skills__job_status', {
      job_id: '018f0000-0000-7000-8000-000000000000',
    });
    const result = await client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema);
    expect(result.isError).toBe(true);
    expect((await client.experimental.tasks.getTask(task.taskId)).status).toBe('failed');
  });

  it('tasks/cancel cancels the call on the mesh', async () => {
    const client = await mesh.connect();
    const { task } = await createTask(client, 'builtin__sleep', { ms: 60_000 });
    await expect
      .poll(async () => (await mesh.api.store.executions.get(mesh.project.id, task.taskId))?.status)
      .toBe('running');
    const cancelled = await client.experimental.tasks.cancelTask(task.taskId);
    expect(cancelled.status).toBe('cancelled');
    expect((await mesh.api.store.executions.get(mesh.project.id, task.taskId))?.status).toBe(
      'canceled',
    );
  });

  it('a task re-sent with the same idempotency key is the same task', async () => {
    const client = await mesh.connect();
    const meta = { 'io.toolmesh/idempotency-key': `task-${Date.now()}` };
    const a = await createTask(client, 'builtin__echo', { x: 1 }, meta);
    const b = await createTask(client, 'builtin__echo', { x: 1 }, meta);
    expect(b.task.taskId).toBe(a.task.taskId);
    await client.experimental.tasks.getTaskResult(a.task.taskId, CallToolResultSchema);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, a.task.taskId)).toBe(1);
  });

  it('the task view expires after its ttl; the card stays readable over HTTP', async () => {
    const client = await mesh.connect();
    const { task } = await client.request(
      {
        method: 'tools/call',
        params: { name: 'builtin__echo', arguments: { ttl: 1 }, task: { ttl: 1_500 } },
      },
      CreateTaskResultSchema,
    );
    expect(task.ttl).toBe(1_500);
    await expect
      .poll(
        () =>
          client.experimental.tasks.getTask(task.taskId).then(
            () => 'live',
            (err: Error) => err.message,
          ),
        { timeout: 10_000, interval: 250 },
      )
      .toMatch(/Task not found/);
    await expect(
      client.experimental.tasks.getTaskResult(task.taskId, CallToolResultSchema),
    ).rejects.toThrow(/not found/i);
    const res = await mesh.api.request(
      'GET',
      `/v1/projects/${mesh.project.id}/executions/${task.taskId}`,
      { key: mesh.project.key },
    );
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({
      execution: { status: 'succeeded' },
      card: { content: { result: { ttl: 1 } } },
    });
  });

  it("another project's session does not see the task", async () => {
    const client = await mesh.connect();
    const { task } = await createTask(client, 'builtin__echo', { y: 1 });
    const other = await mesh.api.createProject();
    const theirs = await mesh.connect({ project: other.id, key: other.key });
    await expect(theirs.experimental.tasks.getTask(task.taskId)).rejects.toThrow(/not found/i);
  });
});
