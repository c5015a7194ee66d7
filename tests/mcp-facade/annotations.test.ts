// Tool annotations, output schemas and task support in tools/list, on both revisions: the reserved
// tools' annotations from the catalog; a tool registered over HTTP with its annotations, output
// schema and a timeout over 60 s; an upstream MCP server's annotations and output schema kept by
// discovery, and its structuredContent passed on so a client's outputSchema check holds. Bad
// annotations or output schemas are refused with 400; another project's tools never show.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport,
} from '@modelcontextprotocol/client';
import { addMcpFixture, startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: Awaited<ReturnType<typeof addMcpFixture>>;
const modernClients: ModernClient[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  fixture = await addMcpFixture(mesh);
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/tools`, {
    key: mesh.project.key,
    body: {
      name: 'crm.report',
      description: 'Builds a report',
      parameters: { type: 'object', properties: { q: { type: 'string' } } },
      options: { timeout_ms: 120_000 },
      annotations: { readOnlyHint: true, openWorldHint: true },
      output_schema: { type: 'object', properties: { url: { type: 'string' } } },
    },
  });
  if (res.status !== 201) throw new Error(`registering crm.report failed: ${res.raw}`);
});
afterAll(async () => {
  for (const c of modernClients) await c.close().catch(() => undefined);
  await fixture?.stop();
  await mesh?.close();
});

async function modern(): Promise<ModernClient> {
  const client = new ModernClient(
    { name: 'annotations-test', version: '1.0.0' },
    { versionNegotiation: { mode: 'auto' } },
  );
  modernClients.push(client);
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return client;
}

type Listed = {
  name: string;
  annotations?: unknown;
  outputSchema?: unknown;
  execution?: unknown;
  _meta?: Record<string, unknown>;
}[];

// 2025-11-25 declares task support per tool (`execution.taskSupport`); 2026-07-28 has no such
// field (the server decides per call: a task whenever the request declares the extension).
const revisions: [string, () => Promise<Listed>, unknown][] = [
  [
    '2025-era',
    async () => (await (await mesh.connect()).listTools()).tools,
    { taskSupport: 'optional' },
  ],
  ['2026-07-28', async () => (await (await modern()).listTools()).tools, undefined],
];

describe.each(revisions)('tools/list on %s', (_rev, list, execution) => {
  it("carries the reserved tools' annotations and task support", async () => {
    const tools = await list();
    const byName = (n: string) => tools.find((t) => t.name === n);
    expect(byName('builtin__echo')).toMatchObject({
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true },
    });
    expect(byName('builtin__echo')?.execution).toEqual(execution);
    expect(byName('builtin__echo')?._meta?.['io.toolmesh/long-running']).toBeUndefined();
    for (const long of ['skills__run_cmd_async', 'skills__run_service', 'skills__start_job']) {
      expect(byName(long)).toMatchObject({
        annotations: { readOnlyHint: false, destructiveHint: true, openWorldHint: true },
        _meta: { 'io.toolmesh/long-running': true },
      });
      expect(byName(long)?.execution).toEqual(execution);
    }
    expect(byName('skills__task_cancel')).toMatchObject({
      annotations: { destructiveHint: true, idempotentHint: true },
    });
  });

  it("carries a registered tool's annotations and output schema; a long timeout marks it", async () => {
    const tools = await list();
    expect(tools.find((t) => t.name === 'crm__report')).toMatchObject({
      annotations: { readOnlyHint: true, openWorldHint: true },
      outputSchema: { type: 'object', properties: { url: { type: 'string' } } },
      _meta: { 'io.toolmesh/long-running': true },
    });
    expect(tools.find((t) => t.name === 'crm__report')?.execution).toEqual(execution);
  });

  it("carries an upstream MCP server's annotations and output schema", async () => {
    const tools = await list();
    const echo = tools.find((t) => t.name === 'web__echo');
    expect(echo).toMatchObject({
      annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      outputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    });
  });
});

describe('calls of a tool with an output schema', () => {
  it("passes the upstream's structuredContent, so both clients' checks hold", async () => {
    const legacy = await mesh.connect();
    await legacy.listTools();
    const a = await legacy.callTool({ name: 'web__echo', arguments: { text: 'hi' } });
    expect(a.structuredContent).toEqual({ text: 'hi' });
    expect(a.content).toEqual([{ type: 'text', text: 'echo: hi' }]);
    const client = await modern();
    await client.listTools();
    const b = await client.callTool({ name: 'web__echo', arguments: { text: 'ho' } });
    expect(b.structuredContent).toEqual({ text: 'ho' });
  });
});

describe('registering annotations and output schemas', () => {
  const post = (body: Record<string, unknown>, key = mesh.project.key, project = mesh.project.id) =>
    mesh.api.request('POST', `/v1/projects/${project}/tools`, {
      key,
      body: { description: 'x', parameters: { type: 'object' }, ...body },
    });

  it('refuses a hint that is not a boolean, or an unknown one', async () => {
    const res = await post({ name: 'crm.bad1', annotations: { readOnlyHint: 'yes' } });
    expect(res.status).toBe(400);
    expect(res.raw).toMatch(/readOnlyHint/);
    const unknown = await post({ name: 'crm.bad2', annotations: { safeHint: true } });
    expect(unknown.status).toBe(400);
  });

  it('refuses an output schema that is not an object schema', async () => {
    const res = await post({ name: 'crm.bad3', output_schema: { type: 'string' } });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({
      error: { code: 'invalid_schema', details: { field: 'output_schema' } },
    });
  });

  it('PATCH replaces annotations and removes the output schema; the HTTP view shows them', async () => {
    const res = await mesh.api.request(
      'PATCH',
      `/v1/projects/${mesh.project.id}/tools/crm.report`,
      {
        key: mesh.project.key,
        body: { annotations: { destructiveHint: true }, output_schema: null },
      },
    );
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({ annotations: { destructiveHint: true }, output_schema: null });
    const tools = (await (await mesh.connect()).listTools()).tools;
    const report = tools.find((t) => t.name === 'crm__report');
    expect(report?.annotations).toEqual({ destructiveHint: true });
    expect(report?.outputSchema).toBeUndefined();
  });

  it("another project's tools list shows none of ours", async () => {
    const other = await mesh.api.createProject();
    const theirs = await mesh.connect({ project: other.id, key: other.key });
    const names = (await theirs.listTools()).tools.map((t) => t.name);
    expect(names).toContain('builtin__echo');
    expect(names).not.toContain('crm__report');
    expect(names).not.toContain('web__echo');
  });
});
