// A server of the 2025 revisions only asks (elicitation/create) during a call of a 2026-07-28
// client: the client is answered `input_required` with the question (keyed by its input request
// id) and a requestState of the mesh; its re-sent request answers the input request, the answer
// reaches the server's request that waited meanwhile, and the same call finishes with the
// server's result: one execution, one card. Content that does not fit the form is -32602 and
// the request stays open; the state replayed on another project's endpoint of the same name is
// -32602 and answers nothing.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { JsonRpcResponse } from '@modelcontextprotocol/ext-tasks/client';
import {
  INTERVIEW_TOOL,
  startMcpEverythingServer,
  startMcpHttpServer,
  type McpEverythingFixture,
  type McpHttpFixture,
} from '@toolmesh/testing';
import type { ToolsService } from '../../services/tools/src/app.ts';
import {
  modernDispatch,
  registerMcpServers,
  startFacadeMeshWithTools,
  type FacadeMesh,
} from './support.ts';

let mesh: FacadeMesh;
let legacy: McpEverythingFixture;
let interviewer: McpHttpFixture;
let tools: ToolsService;
let other: { id: string; key: string };
beforeAll(async () => {
  legacy = await startMcpEverythingServer({ modern: false });
  interviewer = await startMcpHttpServer({ tools: [INTERVIEW_TOOL] });
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  await registerMcpServers(mesh, 'legacy', [
    [mesh.project, legacy.url],
    [other, legacy.url],
  ]);
  await registerMcpServers(mesh, 'interviewer', [[mesh.project, interviewer.url]]);
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await legacy?.stop();
  await interviewer?.stop();
  await mesh?.close();
});

function framed(params: Record<string, unknown>) {
  return {
    method: 'tools/call',
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': { elicitation: { form: {} } },
      },
    },
  };
}

const send = (
  project: { id: string; key: string },
  params: Record<string, unknown>,
  server = 'legacy',
) => modernDispatch(mesh.serverUrl(project.id, server), project.key)(framed(params));

const result = (r: JsonRpcResponse) => {
  if (r.kind !== 'result') throw new Error(`an error: ${r.error.message}`);
  return r.result as Record<string, any>;
};

/** A call of the server's elicitation tool, answered input_required. */
async function ask(message: string) {
  const call = { name: 'test_elicitation', arguments: { message } };
  const first = result(await send(mesh.project, call));
  expect(first['resultType'], JSON.stringify(first)).toBe('input_required');
  const [id, request] = Object.entries(first['inputRequests'] as Record<string, any>)[0]!;
  return { call, id, request, requestState: first['requestState'] as string };
}

describe("a 2025-era server's question to a 2026-07-28 client", () => {
  it('comes back input_required, and the answer reaches the waiting server: one card', async () => {
    const asked = await ask('Your name?');
    expect(asked.request).toEqual({
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Your name?',
        requestedSchema: {
          type: 'object',
          properties: { response: { type: 'string', description: "User's response" } },
          required: ['response'],
        },
      },
    });
    expect(asked.requestState).toMatch(/^tm-input\.1\./);
    // The question waits as the mesh's input request, the server's call held open.
    const pending = await mesh.api.store.inputRequests.get(mesh.project.id, asked.id);
    expect(pending).toMatchObject({
      status: 'pending',
      server: 'legacy',
      tool_name: 'legacy.test_elicitation',
    });

    const done = result(
      await send(mesh.project, {
        ...asked.call,
        inputResponses: { [asked.id]: { action: 'accept', content: { response: 'Ada' } } },
        requestState: asked.requestState,
      }),
    );
    expect(done['content']).toEqual([
      { type: 'text', text: 'User response: action=accept, content={"response":"Ada"}' },
    ]);
    const toolCallId = pending!.tool_call_id;
    expect(await mesh.api.store.executions.get(mesh.project.id, toolCallId)).toMatchObject({
      status: 'succeeded',
      attempts: 1,
    });
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, toolCallId)).toBe(1);
    expect(await mesh.api.store.inputRequests.get(mesh.project.id, asked.id)).toMatchObject({
      status: 'answered',
      action: 'accept',
      content: { response: 'Ada' },
    });
    // The same re-send again is answered from the card.
    const again = result(
      await send(mesh.project, {
        ...asked.call,
        inputResponses: { [asked.id]: { action: 'accept', content: { response: 'Ada' } } },
        requestState: asked.requestState,
      }),
    );
    expect(again['content']).toEqual(done['content']);
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, toolCallId)).toBe(1);
  });

  it('content that does not fit the form is refused and the question stays open', async () => {
    const asked = await ask('Your age?');
    const wrong = await send(mesh.project, {
      ...asked.call,
      inputResponses: { [asked.id]: { action: 'accept', content: { response: 5 } } },
      requestState: asked.requestState,
    });
    expect(wrong).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(await mesh.api.store.inputRequests.get(mesh.project.id, asked.id)).toMatchObject({
      status: 'pending',
    });
    const declined = result(
      await send(mesh.project, {
        ...asked.call,
        inputResponses: { [asked.id]: { action: 'decline' } },
        requestState: asked.requestState,
      }),
    );
    expect(declined['content']).toEqual([
      { type: 'text', text: 'User response: action=decline, content={}' },
    ]);
  });

  it("another project's endpoint of the same name refuses the state and answers nothing", async () => {
    const asked = await ask('Whose is it?');
    const before = legacy.methods.filter((m) => m === 'tools/call').length;
    const replayed = await send(other, {
      ...asked.call,
      inputResponses: { [asked.id]: { action: 'accept', content: { response: 'theirs' } } },
      requestState: asked.requestState,
    });
    expect(replayed).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(legacy.methods.filter((m) => m === 'tools/call').length).toBe(before);
    expect(await mesh.api.store.inputRequests.get(mesh.project.id, asked.id)).toMatchObject({
      status: 'pending',
    });
    // Its own project's answer still decides it.
    const done = result(
      await send(mesh.project, {
        ...asked.call,
        inputResponses: { [asked.id]: { action: 'accept', content: { response: 'ours' } } },
        requestState: asked.requestState,
      }),
    );
    expect(done['content']).toEqual([
      { type: 'text', text: 'User response: action=accept, content={"response":"ours"}' },
    ]);
  });

  it("a server's second question is a second input_required round of the same call", async () => {
    const call = { name: INTERVIEW_TOOL, arguments: {} };
    const round = async (params: Record<string, unknown>) =>
      result(await send(mesh.project, { ...call, ...params }, 'interviewer'));
    const first = await round({});
    expect(first['resultType']).toBe('input_required');
    const [nameId, nameReq] = Object.entries(first['inputRequests'] as Record<string, any>)[0]!;
    expect(nameReq.params.message).toBe('Your name?');
    const second = await round({
      inputResponses: { [nameId]: { action: 'accept', content: { name: 'Ada' } } },
      requestState: first['requestState'],
    });
    expect(second['resultType']).toBe('input_required');
    const [colourId, colourReq] = Object.entries(
      second['inputRequests'] as Record<string, any>,
    )[0]!;
    expect(colourId).not.toBe(nameId);
    expect(colourReq.params.message).toBe('Ada, your colour?');
    const done = await round({
      inputResponses: { [colourId]: { action: 'accept', content: { colour: 'green' } } },
      requestState: second['requestState'],
    });
    expect(done['content']).toEqual([{ type: 'text', text: 'Ada likes green' }]);
    const asked = await mesh.api.store.inputRequests.get(mesh.project.id, colourId);
    // Both questions belong to one call, with one card.
    expect((await mesh.api.store.inputRequests.get(mesh.project.id, nameId))?.tool_call_id).toBe(
      asked?.tool_call_id,
    );
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, asked!.tool_call_id)).toBe(
      1,
    );
    expect(interviewer.methods.filter((m) => m === 'tools/call')).toHaveLength(1);
  });

  it("the project's facade asks the same way under the prefixed name", async () => {
    const raw = modernDispatch(mesh.mcpUrl(mesh.project.id), mesh.project.key);
    const call = { name: 'legacy__test_elicitation', arguments: { message: 'Via the facade?' } };
    const first = result(await raw(framed(call)));
    expect(first['resultType']).toBe('input_required');
    const [id, request] = Object.entries(first['inputRequests'] as Record<string, any>)[0]!;
    expect(request.params.message).toBe('Via the facade?');
    // Not on the server's own endpoint: the state is bound to where it was issued.
    const elsewhere = await send(mesh.project, {
      name: 'test_elicitation',
      arguments: { message: 'Via the facade?' },
      inputResponses: { [id]: { action: 'accept', content: { response: 'no' } } },
      requestState: first['requestState'],
    });
    expect(elsewhere).toMatchObject({ kind: 'error', error: { code: -32602 } });
    const done = result(
      await raw(
        framed({
          ...call,
          inputResponses: { [id]: { action: 'accept', content: { response: 'yes' } } },
          requestState: first['requestState'],
        }),
      ),
    );
    expect(done['content']).toEqual([
      { type: 'text', text: 'User response: action=accept, content={"response":"yes"}' },
    ]);
  });
});
