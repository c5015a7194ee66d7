// What an MCP server asks during a call that no MCP client can answer (a call over the bus, or a
// facade client without the capability): an elicitation becomes a durable input request that any
// api instance answers later (HTTP API, CLI); the answer goes back to the server and the call
// finishes with the server's result, one card. Unanswered past the call's deadline, the request
// expires and the call fails input_expired. Sampling is refused (sampling_unavailable) unless
// the project lets [llm] answer it. Another project's key sees and answers none of it.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { loadConfig } from '@toolmesh/config';
import type { ToolResult } from '@toolmesh/client';
import { createPool, createStore, type Store } from '@toolmesh/store';
import {
  startMcpEverythingServer,
  startScriptedOpenAI,
  type McpEverythingFixture,
  type ScriptedOpenAI,
} from '@toolmesh/testing';
import { buildApp, type ApiApp } from '../../services/api/src/app.ts';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { runToolmesh } from '../support/cli.ts';
import { until } from '../support/procs.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let llm: ScriptedOpenAI;
let tools: ToolsService;
let other: { id: string; key: string };
let store2: Store;
let app2: ApiApp;
let seq = 0;
beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  llm = await startScriptedOpenAI({
    fallback: (req) => ({ text: `model says: ${String(req.body.messages.at(-1)?.content)}` }),
  });
  mesh = await startFacadeMesh(
    { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]', CG__TOOLS__HEALTH_PORT: '0' },
    { skills: false },
  );
  tools = await startToolsService(
    loadConfig({
      env: mesh.api.serviceEnv('tools', {
        CG__LLM__BASE_URL: llm.url,
        CG__LLM__API_KEY: 'sk-sampling',
        CG__LLM__MODEL: 'mesh-model',
      }),
    }),
    pino({ level: mesh.api.config.log.level }),
  );
  other = await mesh.api.createProject();
  for (const p of [mesh.project, other]) {
    const res = await mesh.api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
      key: p.key,
      body: { name: 'everything', transport: 'http', url: fixture.url },
    });
    if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  }
  // A second api instance: its own app, pool and store over the same database and NATS.
  store2 = createStore(
    createPool({
      url: mesh.api.env['CG__POSTGRES__URL']!,
      max: 4,
      statementTimeoutMs: 10_000,
      connectTimeoutMs: 5_000,
      logger: pino({ level: 'silent' }),
    }),
  );
  app2 = await buildApp({
    config: mesh.api.config,
    store: store2,
    nc: mesh.api.nc,
    client: mesh.client,
    artifacts: mesh.api.artifacts,
    logger: pino({ level: 'silent' }),
  });
}, 120_000);
afterAll(async () => {
  await app2?.close();
  await store2?.close();
  await tools?.stop(1_000);
  await fixture?.stop();
  await llm?.stop();
  await mesh?.close();
});

const api = (
  method: 'GET' | 'POST' | 'PATCH',
  path: string,
  body?: unknown,
  project = mesh.project,
) => mesh.api.request(method, `/v1/projects/${project.id}${path}`, { key: project.key, body });

/** A call of one of the fixture's tools over the bus, as the SDK makes it: nobody to ask. */
function call(tool: string, args: Record<string, unknown>, timeoutMs = 60_000) {
  const toolCallId = `input-${++seq}-${Date.now()}`;
  const result: Promise<ToolResult> = mesh.client.callTool(
    {
      project: mesh.project.id,
      channel: 'main',
      tool: `everything.${tool}`,
      arguments: args,
      toolCallId,
      timeoutMs,
    },
    { waitMs: 120_000 },
  );
  return { toolCallId, result };
}

interface InputRequest {
  input_request_id: string;
  tool_call_id: string;
  status: string;
  message: string;
  server: string;
  requested_schema: Record<string, unknown>;
  action: string | null;
  answered_by: string | null;
}

/** The pending input request of a call, once its server asked. */
const pendingOf = (toolCallId: string) =>
  until(async () => {
    const r = await api('GET', '/input-requests');
    return (r.body.input_requests as InputRequest[]).find((x) => x.tool_call_id === toolCallId);
  }, 30_000);

/** The upstream's text answer in a succeeded card of an MCP tool. */
const textOf = (r: ToolResult) =>
  ((r.content.result as { content: { text: string }[] }).content ?? []).map((c) => c.text).join('');

describe('an elicitation no MCP client can answer', () => {
  it('waits as an input request, answered from a second api instance; the call finishes with one card', async () => {
    const { toolCallId, result } = call('test_elicitation', { message: 'Your name?' });
    const pending = await pendingOf(toolCallId);
    expect(pending).toMatchObject({
      status: 'pending',
      message: 'Your name?',
      server: 'everything',
      requested_schema: { required: ['response'] },
    });
    const url = `/v1/projects/${mesh.project.id}/input-requests/${pending.input_request_id}`;
    const answer = (body: unknown) =>
      app2.inject({
        method: 'POST',
        url: `${url}/answer`,
        headers: {
          authorization: `Bearer ${mesh.project.key}`,
          'content-type': 'application/json',
        },
        payload: JSON.stringify(body),
      });
    // Content that does not match the form, or content with a decline, is refused.
    const wrong = await answer({ action: 'accept', content: { response: 5 } });
    expect(wrong.statusCode, wrong.body).toBe(400);
    expect(wrong.json()).toMatchObject({ error: { code: 'invalid_input' } });
    const missing = await answer({ action: 'accept', content: {} });
    expect(missing.json()).toMatchObject({ error: { code: 'invalid_input' } });
    const declineWith = await answer({ action: 'decline', content: { response: 'x' } });
    expect(declineWith.statusCode).toBe(400);

    const ok = await answer({ action: 'accept', content: { response: 'Ada' } });
    expect(ok.statusCode, ok.body).toBe(200);
    expect(ok.json()).toMatchObject({ status: 'answered', action: 'accept' });
    const r = await result;
    expect(r.status).toBe('succeeded');
    expect(textOf(r)).toBe('User response: action=accept, content={"response":"Ada"}');
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, toolCallId)).toBe(1);

    // Answered for good: the same answer answers again, another is a conflict.
    expect((await answer({ action: 'accept', content: { response: 'Ada' } })).statusCode).toBe(200);
    const again = await answer({ action: 'decline' });
    expect(again.statusCode).toBe(409);
    expect(again.json()).toMatchObject({ error: { code: 'conflict' } });
    const shown = await api('GET', `/input-requests/${pending.input_request_id}`);
    expect(shown.body).toMatchObject({
      status: 'answered',
      action: 'accept',
      content: { response: 'Ada' },
    });
    expect(shown.body.answered_by).toMatch(/^key:/);
    const answered = await api('GET', '/input-requests?status=answered');
    expect(
      (answered.body.input_requests as InputRequest[]).map((x) => x.input_request_id),
    ).toContain(pending.input_request_id);
  });

  it('declined: the server is told so and the call finishes with its answer', async () => {
    const { toolCallId, result } = call('test_elicitation', { message: 'Delete it?' });
    const pending = await pendingOf(toolCallId);
    const res = await api('POST', `/input-requests/${pending.input_request_id}/answer`, {
      action: 'decline',
    });
    expect(res.status, res.raw).toBe(200);
    const r = await result;
    expect(textOf(r)).toBe('User response: action=decline, content={}');
  });

  it('answered with the CLI: list, show, answer', async () => {
    const env = {
      TOOLMESH_API_URL: mesh.baseUrl,
      TOOLMESH_API_KEY: mesh.project.key,
      TOOLMESH_PROJECT: mesh.project.id,
    };
    // Before the call, which its server waits for (60 s): accept without content is a usage error.
    const noContent = await runToolmesh(
      ['inputs', 'answer', '0190a0b0-0000-7000-8000-000000000000', '--action', 'accept'],
      env,
    );
    expect(noContent.code).toBe(2);
    const { toolCallId, result } = call('test_elicitation', { message: 'Colour?' });
    await pendingOf(toolCallId);
    const listed = await runToolmesh(['inputs', 'list', '--json'], env);
    expect(listed.code, listed.stderr).toBe(0);
    const row = (JSON.parse(listed.stdout).input_requests as InputRequest[]).find(
      (x) => x.tool_call_id === toolCallId,
    )!;
    const answered = await runToolmesh(
      [
        'inputs',
        'answer',
        row.input_request_id,
        '--action',
        'accept',
        '--content',
        '{"response":"teal"}',
      ],
      env,
    );
    expect(answered.code, answered.stderr).toBe(0);
    expect(answered.stdout).toContain('accept by key:');
    expect(textOf(await result)).toBe('User response: action=accept, content={"response":"teal"}');
    const table = await runToolmesh(['inputs', 'list', '--status', 'answered'], env);
    expect(table.stdout).toContain(row.input_request_id);
    // Shown after the answer (a CLI start takes seconds here; the server waits 60 s at most).
    const shown = await runToolmesh(['inputs', 'show', row.input_request_id], env);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout).toContain('Colour?');
    expect(shown.stdout).toContain('"response"');
    expect(shown.stdout).toContain('answered accept by key:');
  }, 240_000);

  it('a facade client without elicitation is not asked: the question waits as an input request', async () => {
    const client = new Client({ name: 'no-elicitation', version: '1.0.0' }, { capabilities: {} });
    await client.connect(
      new StreamableHTTPClientTransport(mesh.serverUrl(mesh.project.id, 'everything'), {
        requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
      }),
    );
    try {
      const res = client.callTool({ name: 'test_elicitation', arguments: { message: 'Via MCP?' } });
      const pending = await until(async () => {
        const r = await api('GET', '/input-requests');
        return (r.body.input_requests as InputRequest[]).find((x) => x.message === 'Via MCP?');
      }, 30_000);
      await api('POST', `/input-requests/${pending.input_request_id}/answer`, {
        action: 'accept',
        content: { response: 'yes' },
      });
      const done = await res;
      const text = (done.content as { text: string }[]).map((c) => c.text).join('');
      expect(text).toBe('User response: action=accept, content={"response":"yes"}');
    } finally {
      await client.close();
    }
  });

  it("unanswered past the call's deadline: the request expires and the call fails input_expired", async () => {
    const { toolCallId, result } = call('test_elicitation', { message: 'Too late?' }, 4_000);
    const pending = await pendingOf(toolCallId);
    const r = await result;
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({
      code: 'input_expired',
      details: { input_request_id: pending.input_request_id },
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, toolCallId)).toBe(1);
    const shown = await api('GET', `/input-requests/${pending.input_request_id}`);
    expect(shown.body.status).toBe('expired');
    const late = await api('POST', `/input-requests/${pending.input_request_id}/answer`, {
      action: 'decline',
    });
    expect(late.status).toBe(409);
    expect(late.body).toMatchObject({ error: { code: 'input_expired' } });
  });

  it("another project's key can neither list, read nor answer them", async () => {
    const { toolCallId, result } = call('test_elicitation', { message: 'Mine?' });
    const pending = await pendingOf(toolCallId);
    const id = pending.input_request_id;
    for (const [method, path, body] of [
      ['GET', '/input-requests', undefined],
      ['GET', `/input-requests/${id}`, undefined],
      ['POST', `/input-requests/${id}/answer`, { action: 'decline' }],
    ] as const) {
      const r = await mesh.api.request(method, `/v1/projects/${mesh.project.id}${path}`, {
        key: other.key,
        body,
      });
      expect(r.status, `${method} ${path}: ${r.raw}`).toBe(404);
    }
    // Its own project has no such request either.
    expect((await api('GET', `/input-requests/${id}`, undefined, other)).status).toBe(404);
    const answerOwn = await api(
      'POST',
      `/input-requests/${id}/answer`,
      { action: 'cancel' },
      other,
    );
    expect(answerOwn.status).toBe(404);
    expect((await api('GET', '/input-requests', undefined, other)).body.input_requests).toEqual([]);
    expect((await api('GET', `/input-requests/${id}`)).body.status).toBe('pending');
    await api('POST', `/input-requests/${id}/answer`, { action: 'cancel' });
    expect(textOf(await result)).toBe('User response: action=cancel, content={}');
  });
});

describe('a sampling request no MCP client can answer', () => {
  it('is refused with sampling_unavailable while the project has not turned [llm] on for it', async () => {
    const { result } = call('test_sampling', { prompt: 'hello' });
    const r = await result;
    expect(r.status).toBe('succeeded');
    expect(textOf(r)).toMatch(
      /^Sampling not supported or error: .*sampling_unavailable: no MCP client is waiting for this call.*mcp_sampling_llm/,
    );
    expect(llm.requests()).toHaveLength(0);
  });

  it("is answered by [llm] once the project's tools.mcp_sampling_llm is on; not for another project", async () => {
    const set = await api('PATCH', '/settings', { tools: { mcp_sampling_llm: true } });
    expect(set.status, set.raw).toBe(200);
    expect(set.body.effective.tools.mcp_sampling_llm).toBe(true);
    const { result } = call('test_sampling', { prompt: 'hello' });
    const r = await result;
    expect(textOf(r)).toBe('LLM response: model says: hello');
    const [req] = llm.requests();
    expect(req?.body).toMatchObject({
      model: 'mesh-model',
      messages: [{ role: 'user', content: 'hello' }],
      max_tokens: 100,
    });
    expect(req?.authorization).toBe('Bearer sk-sampling');

    // The other project has not turned it on: refused, and the model is not asked.
    const theirs = await mesh.client.callTool(
      {
        project: other.id,
        channel: 'main',
        tool: 'everything.test_sampling',
        arguments: { prompt: 'free tokens?' },
      },
      { waitMs: 60_000 },
    );
    expect(textOf(theirs)).toMatch(/sampling_unavailable/);
    expect(llm.requests()).toHaveLength(1);
  });
});
