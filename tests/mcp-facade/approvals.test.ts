// An MCP client answering a human approval through the facade, in its revision's own input
// mechanism: a 2025-era client that declared elicitation is asked while its tools/call waits, and
// its answer approves (the call runs once) or denies it (approval_denied, decided by its key); a
// 2026-07-28 task of such a call is input_required with the elicitation as its input request,
// and tasks/update decides it. Another project's key can neither read nor answer that task. A
// plain 2026-07-28 tools/call of a client that declared elicitation is answered input_required
// (the elicitation, a requestState); the re-sent request decides the approval and returns the
// call's card, the same call's, and a requestState replayed under another project's key is
// refused.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  Client as ModernClient,
  StreamableHTTPClientTransport as ModernTransport,
} from '@modelcontextprotocol/client';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema, type ElicitRequest } from '@modelcontextprotocol/sdk/types.js';
import type { JsonRpcResponse } from '@modelcontextprotocol/ext-tasks/client';
import { idempotentCallId } from '../../services/api/src/mcp/calls.ts';
import { modernDispatch, startFacadeMesh, type FacadeMesh } from './support.ts';

const TASKS = 'io.modelcontextprotocol/tasks';

let mesh: FacadeMesh;
let other: { id: string; key: string };
let keyId: string;
const clients: { close(): Promise<void> }[] = [];
beforeAll(async () => {
  mesh = await startFacadeMesh();
  other = await mesh.api.createProject();
  const res = await mesh.api.request(
    'PUT',
    `/v1/projects/${mesh.project.id}/targets/builtin/approval`,
    {
      key: mesh.project.key,
      body: { approval: 'required' },
    },
  );
  expect(res.status, res.raw).toBe(200);
  const keys = await mesh.api.request('GET', `/v1/projects/${mesh.project.id}/keys`, {
    key: mesh.project.key,
  });
  keyId = (keys.body.keys as { key_id: string }[])[0]!.key_id;
}, 60_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await mesh?.close();
});

/** A 2025-era client that declares elicitation and answers every prompt with `answer`. */
async function elicitingClient(
  answer: (req: ElicitRequest['params']) => { action: string; content?: Record<string, unknown> },
) {
  const asked: ElicitRequest['params'][] = [];
  const client = new Client(
    { name: 'approver', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } } },
  );
  client.setRequestHandler(ElicitRequestSchema, (req) => {
    asked.push(req.params);
    return answer(req.params);
  });
  await client.connect(
    new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  clients.push(client);
  return { client, asked };
}

function framed(
  method: string,
  params: Record<string, unknown>,
  capabilities: Record<string, unknown> = { extensions: { [TASKS]: {} } },
) {
  return {
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': capabilities,
      },
    },
  };
}

/** A 2.x client negotiating 2026-07-28 that declares elicitation and answers with `answer`. */
async function modernApprover(answer: { action: string; content?: Record<string, unknown> }) {
  const asked: Record<string, unknown>[] = [];
  const client = new ModernClient(
    { name: 'modern-approver', version: '1.0.0' },
    { capabilities: { elicitation: { form: {} } }, versionNegotiation: { mode: 'auto' } },
  );
  client.setRequestHandler('elicitation/create', (req) => {
    asked.push(req.params);
    return answer as never;
  });
  clients.push(client);
  await client.connect(
    new ModernTransport(mesh.mcpUrl(mesh.project.id), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  expect(client.getNegotiatedProtocolVersion()).toBe('2026-07-28');
  return { client, asked };
}
const taskHeaders = (taskId: string) => ({ context: { headers: { 'mcp-name': taskId } } });
const result = (r: JsonRpcResponse) => {
  if (r.kind !== 'result') throw new Error(`an error: ${r.error.message}`);
  return r.result as Record<string, any>;
};

describe('approvals through the MCP facade', () => {
  it('a 2025 client that declared elicitation approves the call it made', async () => {
    const { client, asked } = await elicitingClient(() => ({
      action: 'accept',
      content: { approve: true, reason: 'I asked for it' },
    }));
    const res = await client.callTool({ name: 'builtin__echo', arguments: { text: 'approve me' } });
    expect(res.isError, JSON.stringify(res)).toBeFalsy();
    expect(res.structuredContent).toMatchObject({ text: 'approve me' });
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toContain('builtin.echo');
    expect(asked[0]!.message).toContain('approve me');
    const id = (res._meta as Record<string, string>)['io.toolmesh/tool-call-id']!;
    expect(await mesh.api.store.approvals.forCall(mesh.project.id, id)).toMatchObject({
      status: 'approved',
      decided_by: `mcp:${keyId}`,
      decision_reason: 'I asked for it',
    });
    const exec = await mesh.api.store.executions.get(mesh.project.id, id);
    expect(exec).toMatchObject({ status: 'succeeded', attempts: 1 });
  });

  it('and its refusal denies the call: approval_denied, decided by its key', async () => {
    const { client } = await elicitingClient(() => ({
      action: 'accept',
      content: { approve: false, reason: 'not now' },
    }));
    const res = await client.callTool({ name: 'builtin__echo', arguments: { text: 'deny me' } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      status: 'failed',
      error: {
        code: 'approval_denied',
        details: { decided_by: `mcp:${keyId}`, reason: 'not now' },
      },
    });
  });

  it('a client re-sending a keyed call that already waits for approval is asked too', async () => {
    // The call is parked by a client that cannot be asked; its awaiting_approval event is long
    // gone when the re-send arrives, so the facade finds the approval in Postgres.
    const plain = new Client({ name: 'plain', version: '1.0.0' });
    await plain.connect(
      new StreamableHTTPClientTransport(mesh.mcpUrl(mesh.project.id), {
        requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
      }),
    );
    clients.push(plain);
    const key = `parked-${Date.now()}`;
    const params = {
      name: 'builtin__echo',
      arguments: { text: 'parked first' },
      _meta: { 'io.toolmesh/idempotency-key': key },
    };
    const first = plain.callTool(params);
    const id = idempotentCallId(mesh.project.id, key);
    await expect
      .poll(async () => (await mesh.api.store.approvals.forCall(mesh.project.id, id))?.status, {
        timeout: 20_000,
      })
      .toBe('pending');
    const { client, asked } = await elicitingClient(() => ({
      action: 'accept',
      content: { approve: true, reason: 'seen on the re-send' },
    }));
    const second = await client.callTool(params);
    expect(second.isError, JSON.stringify(second)).toBeFalsy();
    expect(asked).toHaveLength(1);
    expect(asked[0]!.message).toContain('parked first');
    // Both requests get the one call's card.
    const firstResult = await first;
    expect(firstResult.structuredContent).toEqual(second.structuredContent);
    expect((second._meta as Record<string, string>)['io.toolmesh/tool-call-id']).toBe(id);
    expect(await mesh.api.store.approvals.forCall(mesh.project.id, id)).toMatchObject({
      status: 'approved',
      decision_reason: 'seen on the re-send',
    });
    expect(await mesh.api.store.executions.get(mesh.project.id, id)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
  });

  it('a 2026-07-28 task is input_required until tasks/update answers its input request', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const created = result(
      await raw(framed('tools/call', { name: 'builtin__echo', arguments: { text: 'as a task' } })),
    );
    const taskId = created['taskId'] as string;
    let task: Record<string, any> = {};
    await expect
      .poll(
        async () => {
          task = result(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId)));
          return task['status'] as string;
        },
        { timeout: 30_000 },
      )
      .toBe('input_required');
    const [requestId, request] = Object.entries(task['inputRequests'] as Record<string, any>)[0]!;
    expect(request).toMatchObject({
      method: 'elicitation/create',
      params: { mode: 'form', requestedSchema: { required: ['approve'] } },
    });
    expect(request.params.message).toContain('as a task');

    // Another project's key neither sees the task nor answers it.
    const foreign = modernDispatch(mesh.mcpUrl(mesh.project.id), other.key);
    const seen = await foreign(framed('tasks/get', { taskId }), taskHeaders(taskId));
    expect(seen.kind).toBe('error');
    const stranger = await foreign(
      framed('tasks/update', {
        taskId,
        inputResponses: { [requestId]: { action: 'accept', content: { approve: true } } },
      }),
      taskHeaders(taskId),
    );
    expect(stranger.kind).toBe('error');
    // An answer under another name is ignored (SEP-2663): acknowledged, the approval still
    // pending, the task still waiting for it.
    const wrong = await raw(
      framed('tasks/update', { taskId, inputResponses: { nope: { action: 'accept' } } }),
      taskHeaders(taskId),
    );
    expect(wrong.kind).toBe('result');
    expect(await mesh.api.store.approvals.get(mesh.project.id, requestId)).toMatchObject({
      status: 'pending',
    });
    expect(result(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId)))).toMatchObject({
      status: 'input_required',
    });
    // An answer that is not an elicitation result, under the request's own id, is refused.
    const malformed = await raw(
      framed('tasks/update', { taskId, inputResponses: { [requestId]: { action: 'maybe' } } }),
      taskHeaders(taskId),
    );
    expect(malformed).toMatchObject({ kind: 'error', error: { code: -32602 } });

    const updated = await raw(
      framed('tasks/update', {
        taskId,
        inputResponses: { [requestId]: { action: 'accept', content: { approve: true } } },
      }),
      taskHeaders(taskId),
    );
    expect(updated.kind, JSON.stringify(updated)).toBe('result');
    await expect
      .poll(
        async () =>
          result(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId)))[
            'status'
          ] as string,
        { timeout: 30_000 },
      )
      .toBe('completed');
    const done = result(await raw(framed('tasks/get', { taskId }), taskHeaders(taskId)));
    expect(done['result']).toMatchObject({ structuredContent: { text: 'as a task' } });
    expect(await mesh.api.store.approvals.get(mesh.project.id, requestId)).toMatchObject({
      status: 'approved',
      decided_by: `mcp:${keyId}`,
    });
  });

  it('a 2026-07-28 tools/call is answered input_required and its re-send returns the one card', async () => {
    const { client, asked } = await modernApprover({
      action: 'accept',
      content: { approve: true, reason: 'go ahead' },
    });
    const res = await client.callTool({ name: 'builtin__echo', arguments: { text: 'mrtr yes' } });
    expect(res.isError, JSON.stringify(res)).toBeFalsy();
    expect(res.structuredContent).toMatchObject({ text: 'mrtr yes' });
    expect(asked).toHaveLength(1);
    expect(asked[0]!['message']).toContain('mrtr yes');
    expect(asked[0]!['requestedSchema']).toMatchObject({ required: ['approve'] });
    const id = (res._meta as Record<string, string>)['io.toolmesh/tool-call-id']!;
    expect(await mesh.api.store.approvals.forCall(mesh.project.id, id)).toMatchObject({
      status: 'approved',
      decided_by: `mcp:${keyId}`,
      decision_reason: 'go ahead',
    });
    expect(await mesh.api.store.executions.get(mesh.project.id, id)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it('a 2026-07-28 client that declines denies the call: approval_denied', async () => {
    const { client } = await modernApprover({ action: 'decline' });
    const res = await client.callTool({ name: 'builtin__echo', arguments: { text: 'mrtr no' } });
    expect(res.isError).toBe(true);
    expect(res.structuredContent).toMatchObject({
      status: 'failed',
      error: {
        code: 'approval_denied',
        details: { decided_by: `mcp:${keyId}`, reason: 'declined by the MCP client' },
      },
    });
    const id = (res._meta as Record<string, string>)['io.toolmesh/tool-call-id']!;
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it("refuses a requestState replayed with another project's key; its own key's answer decides", async () => {
    const elicits = { elicitation: { form: {} } };
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const call = { name: 'builtin__echo', arguments: { text: 'replayed' } };
    const first = result(await raw(framed('tools/call', call, elicits)));
    expect(first['resultType']).toBe('input_required');
    const [requestId, request] = Object.entries(first['inputRequests'] as Record<string, any>)[0]!;
    expect(request).toMatchObject({ method: 'elicitation/create', params: { mode: 'form' } });
    const requestState = first['requestState'] as string;
    const approve = { [requestId]: { action: 'accept', content: { approve: true } } };

    const foreign = modernDispatch(mesh.mcpUrl(other.id), other.key);
    const replayed = await foreign(
      framed('tools/call', { ...call, requestState, inputResponses: approve }, elicits),
    );
    expect(replayed).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(await mesh.api.store.approvals.get(mesh.project.id, requestId)).toMatchObject({
      status: 'pending',
    });
    // A state that is not one the server issued is refused too.
    const forged = await raw(
      framed(
        'tools/call',
        { ...call, requestState: 'bm90IG1pbmU', inputResponses: approve },
        elicits,
      ),
    );
    expect(forged).toMatchObject({ kind: 'error', error: { code: -32602 } });

    const done = result(
      await raw(framed('tools/call', { ...call, requestState, inputResponses: approve }, elicits)),
    );
    expect(done['structuredContent']).toMatchObject({ text: 'replayed' });
    const id = (done['_meta'] as Record<string, string>)['io.toolmesh/tool-call-id']!;
    expect(await mesh.api.store.approvals.get(mesh.project.id, requestId)).toMatchObject({
      status: 'approved',
      tool_call_id: id,
      decided_by: `mcp:${keyId}`,
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it('a 2026-07-28 client that did not declare elicitation waits for a decision made elsewhere', async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const call = { name: 'builtin__echo', arguments: { text: 'not asked' } };
    const answer = raw(framed('tools/call', call, {}));
    let approvalId = '';
    await expect
      .poll(
        async () => {
          const res = await mesh.api.request('GET', `/v1/projects/${mesh.project.id}/approvals`, {
            key: mesh.project.key,
          });
          const found = (
            res.body.approvals as { approval_id: string; arguments: Record<string, unknown> }[]
          ).find((a) => a.arguments['text'] === 'not asked');
          approvalId = found?.approval_id ?? '';
          return approvalId;
        },
        { timeout: 30_000 },
      )
      .not.toBe('');
    const approved = await mesh.api.request(
      'POST',
      `/v1/projects/${mesh.project.id}/approvals/${approvalId}/approve`,
      { key: mesh.project.key, body: {} },
    );
    expect(approved.status, approved.raw).toBe(200);
    const done = result(await answer);
    expect(done['resultType']).not.toBe('input_required');
    expect(done['structuredContent']).toMatchObject({ text: 'not asked' });
  });
});
