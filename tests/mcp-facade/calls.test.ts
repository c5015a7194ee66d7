// tools/call over the facade: builtin.echo answered from its card (text and structuredContent,
// an execution row on the `mcp` channel), a failed card as isError with its code and message,
// arguments the schema refuses, a name the client was never shown, a tool disabled after the
// facade last resolved it, and a call no tool service has taken listed as queued meanwhile.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { McpError } from '@modelcontextprotocol/sdk/types.js';
import { until } from '../support/procs.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
beforeAll(async () => {
  mesh = await startFacadeMesh();
});
afterAll(async () => mesh?.close());

const callIdOf = (r: { _meta?: Record<string, unknown> | undefined }) =>
  r._meta?.['io.toolmesh/tool-call-id'] as string;

describe('tools/call', () => {
  it('runs builtin.echo on the mesh and answers from its card', async () => {
    const client = await mesh.connect();
    const res = await client.callTool({
      name: 'builtin__echo',
      arguments: { text: 'hello', n: 3 },
    });
    expect(res.isError).toBeFalsy();
    expect(res.structuredContent).toEqual({ text: 'hello', n: 3 });
    expect(res.content).toEqual([{ type: 'text', text: JSON.stringify({ text: 'hello', n: 3 }) }]);
    const e = await mesh.api.store.executions.get(mesh.project.id, callIdOf(res));
    expect(e).toMatchObject({ tool_name: 'builtin.echo', channel: 'mcp', status: 'succeeded' });
    expect(e?.card_id).toEqual(expect.any(String));
  });

  it('answers a failed card with isError, its code and message', async () => {
    const client = await mesh.connect();
    const res = await client.callTool({
      name: 'skills__job_status',
      arguments: { job_id: '018f0000-0000-7000-8000-000000000000' },
    });
    expect(res.isError).toBe(true);
    const error = (res.structuredContent as { error: { code: string; message: string } }).error;
    expect(error.code).toBe('tool_error');
    expect(res.content).toEqual([{ type: 'text', text: `tool_error: ${error.message}` }]);
    const e = await mesh.api.store.executions.get(mesh.project.id, callIdOf(res));
    expect(e).toMatchObject({ status: 'failed', error_code: 'tool_error' });
  });

  it('refuses arguments the schema refuses, before anything runs', async () => {
    const client = await mesh.connect();
    const res = await client.callTool({ name: 'builtin__sleep', arguments: { ms: 'long' } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({ error: { code: 'invalid_arguments' } });
  });

  it('knows no tool by its registry name or a made-up one', async () => {
    const client = await mesh.connect();
    for (const name of ['builtin.echo', 'builtin__nope', 'sys__cancel']) {
      const err = await client.callTool({ name, arguments: {} }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(McpError);
      expect((err as McpError).message).toContain('unknown tool');
    }
  });

  // The facade keeps the rows it resolves (tool-cache.ts): the registry change event must drop
  // them, or a disabled tool would still run until the cache's TTL.
  it('refuses a tool at once once it is disabled, though it was just called', async () => {
    const client = await mesh.connect();
    const before = await client.callTool({ name: 'builtin__sleep', arguments: { ms: 1 } });
    expect(before.isError).toBeFalsy();
    const res = await mesh.api.request(
      'PATCH',
      `/v1/projects/${mesh.project.id}/tools/builtin.sleep`,
      { key: mesh.project.key, body: { enabled: false } },
    );
    expect(res.status, res.raw).toBe(200);
    const err = await client
      .callTool({ name: 'builtin__sleep', arguments: { ms: 1 } })
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(McpError);
    expect((err as McpError).message).toContain('unknown tool');
  });

  // A short call's row is written with its card; one that lasts gets its queued row from the
  // facade (calls.ts), so it is listed while nothing has taken it.
  it('lists a call no tool service has taken yet as queued until the client gives up', async () => {
    const reg = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/tools`, {
      key: mesh.project.key,
      body: {
        name: 'crm.report',
        description: 'Served by nothing here',
        parameters: { type: 'object' },
      },
    });
    expect(reg.status, reg.raw).toBe(201);
    const client = await mesh.connect();
    const abort = new AbortController();
    const pending = client
      .callTool({ name: 'crm__report', arguments: {} }, undefined, { signal: abort.signal })
      .catch((e: unknown) => e);
    const row = await until(async () =>
      (await mesh.api.store.executions.active(mesh.project.id, 10)).find(
        (e) => e.tool_name === 'crm.report',
      ),
    );
    expect(row).toMatchObject({ status: 'queued', channel: 'mcp', instance_id: 'api' });
    abort.abort();
    expect(await pending).toBeInstanceOf(Error);
  });
});
