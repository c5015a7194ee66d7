// Input requests of 2026-07-28 (SEP-2322) through the mesh, beyond tools/call: a resource read
// and a prompt reach a server that speaks the revision on it, on a server's own endpoint and on
// the project's facade, an `input_required` read comes back with the mesh's sealed requestState,
// and the re-sent read finishes with the server's contents; a completion goes on the revision
// too. A requestState is bound to where it was minted: presented to another project's endpoint
// (same server name, same tool) or to another server of the same project, it is -32602 and
// nothing reaches the other server.
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

let mesh: FacadeMesh;
let ours: McpEverythingFixture;
let second: McpEverythingFixture;
let theirs: McpEverythingFixture;
let tools: ToolsService;
let other: { id: string; key: string };
beforeAll(async () => {
  [ours, second, theirs] = await Promise.all([
    startMcpEverythingServer(),
    startMcpEverythingServer(),
    startMcpEverythingServer(),
  ]);
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  // Both projects name their server `everything`; ours has a second one with the same tools.
  await registerMcpServers(mesh, 'everything', [
    [mesh.project, ours.url],
    [other, theirs.url],
  ]);
  await registerMcpServers(mesh, 'second', [[mesh.project, second.url]]);
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await Promise.all([ours?.stop(), second?.stop(), theirs?.stop()]);
  await mesh?.close();
});

const ELICITS = { elicitation: { form: {} } };
const INPUT_RESOURCE = 'test://input-required-resource';
const STATE_TOOL = 'test_input_required_result_request_state';

function framed(method: string, params: Record<string, unknown>) {
  return {
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1.0.0' },
        'io.modelcontextprotocol/clientCapabilities': ELICITS,
      },
    },
  };
}

/** One 2026-07-28 request, its Mcp-Name header mirroring the name or URI it names. */
async function send(
  url: URL,
  key: string,
  method: string,
  params: Record<string, unknown>,
): Promise<JsonRpcResponse> {
  const name = params['uri'] ?? params['name'];
  return modernDispatch(url, key)(framed(method, params), {
    context: { headers: typeof name === 'string' ? { 'mcp-name': name } : {} },
  });
}

const result = (r: JsonRpcResponse) => {
  if (r.kind !== 'result') throw new Error(`an error: ${r.error.message}`);
  return r.result as Record<string, any>;
};

describe('2026-07-28 input requests beyond tools/call', () => {
  it("a resource read asks for input, and the re-sent read gets the server's contents", async () => {
    const url = mesh.serverUrl(mesh.project.id, 'everything');
    const first = result(
      await send(url, mesh.project.key, 'resources/read', { uri: INPUT_RESOURCE }),
    );
    expect(first['resultType']).toBe('input_required');
    expect(first['inputRequests']).toMatchObject({
      purpose: {
        method: 'elicitation/create',
        params: { requestedSchema: { required: ['purpose'] } },
      },
    });
    // The server's own state travels sealed by the mesh, never as the server sent it.
    expect(first['requestState']).toMatch(/^tm-input\.1\./);
    const done = result(
      await send(url, mesh.project.key, 'resources/read', {
        uri: INPUT_RESOURCE,
        inputResponses: { purpose: { action: 'accept', content: { purpose: 'audit' } } },
        requestState: first['requestState'],
      }),
    );
    expect(done['contents']).toEqual([
      { uri: INPUT_RESOURCE, mimeType: 'text/plain', text: 'Read for: audit' },
    ]);
    expect(ours.modernMethods.filter((m) => m === 'resources/read')).toHaveLength(2);
  });

  it('the same read through the project facade, under the prefixed URI', async () => {
    const uri = `toolmesh://mcp-servers/everything/${INPUT_RESOURCE}`;
    const url = mesh.mcpUrl(mesh.project.id);
    const first = result(await send(url, mesh.project.key, 'resources/read', { uri }));
    expect(first['resultType']).toBe('input_required');
    const done = result(
      await send(url, mesh.project.key, 'resources/read', {
        uri,
        inputResponses: { purpose: { action: 'accept', content: { purpose: 'facade' } } },
        requestState: first['requestState'],
      }),
    );
    expect(done['contents']).toEqual([{ uri, mimeType: 'text/plain', text: 'Read for: facade' }]);
  });

  it('a prompt through the facade asks for input on the revision too', async () => {
    const name = 'everything__test_input_required_result_prompt';
    const url = mesh.mcpUrl(mesh.project.id);
    const first = result(await send(url, mesh.project.key, 'prompts/get', { name }));
    expect(first['resultType']).toBe('input_required');
    const done = result(
      await send(url, mesh.project.key, 'prompts/get', {
        name,
        inputResponses: { user_context: { action: 'accept', content: { context: 'tests' } } },
        requestState: first['requestState'],
      }),
    );
    expect(done['messages']).toEqual([
      { role: 'user', content: { type: 'text', text: 'Prompt with context: tests' } },
    ]);
  });

  it('a completion of a 2026-07-28 client reaches the server on that revision', async () => {
    const before = ours.modernMethods.filter((m) => m === 'completion/complete').length;
    const done = result(
      await send(
        mesh.serverUrl(mesh.project.id, 'everything'),
        mesh.project.key,
        'completion/complete',
        {
          ref: { type: 'ref/prompt', name: 'test_prompt_with_arguments' },
          argument: { name: 'arg1', value: 'a' },
        },
      ),
    );
    expect(done['completion']).toMatchObject({ values: [] });
    expect(ours.modernMethods.filter((m) => m === 'completion/complete')).toHaveLength(before + 1);
  });
});

describe('a requestState is bound to its project and server', () => {
  /** A state minted by our `everything` server's endpoint for the state tool. */
  async function mint(
    url: URL,
    name = STATE_TOOL,
  ): Promise<{ requestState: string; answer: unknown }> {
    const first = result(await send(url, mesh.project.key, 'tools/call', { name, arguments: {} }));
    expect(first['resultType']).toBe('input_required');
    return {
      requestState: first['requestState'] as string,
      answer: { confirm: { action: 'accept', content: { ok: true } } },
    };
  }
  const calls = (f: McpEverythingFixture) => f.methods.filter((m) => m === 'tools/call').length;

  it("another project's endpoint refuses it, and its server hears nothing", async () => {
    const minted = await mint(mesh.serverUrl(mesh.project.id, 'everything'));
    const before = calls(theirs);
    const replayed = await send(mesh.serverUrl(other.id, 'everything'), other.key, 'tools/call', {
      name: STATE_TOOL,
      arguments: {},
      inputResponses: minted.answer,
      requestState: minted.requestState,
    });
    expect(replayed).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(calls(theirs)).toBe(before);
    // Where it was minted it still works: the refusal was the binding's.
    const own = result(
      await send(mesh.serverUrl(mesh.project.id, 'everything'), mesh.project.key, 'tools/call', {
        name: STATE_TOOL,
        arguments: {},
        inputResponses: minted.answer,
        requestState: minted.requestState,
      }),
    );
    expect(own['content']).toEqual([{ type: 'text', text: 'state-ok: requestState validated' }]);
  });

  it("another project's facade refuses one of ours under the same prefixed name", async () => {
    const minted = await mint(mesh.mcpUrl(mesh.project.id), `everything__${STATE_TOOL}`);
    const before = calls(theirs);
    const replayed = await send(mesh.mcpUrl(other.id), other.key, 'tools/call', {
      name: `everything__${STATE_TOOL}`,
      arguments: {},
      inputResponses: minted.answer,
      requestState: minted.requestState,
    });
    expect(replayed).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(calls(theirs)).toBe(before);
  });

  it('another server of the same project refuses it, and hears nothing', async () => {
    const minted = await mint(mesh.serverUrl(mesh.project.id, 'everything'));
    const before = calls(second);
    const replayed = await send(
      mesh.serverUrl(mesh.project.id, 'second'),
      mesh.project.key,
      'tools/call',
      {
        name: STATE_TOOL,
        arguments: {},
        inputResponses: minted.answer,
        requestState: minted.requestState,
      },
    );
    expect(replayed).toMatchObject({ kind: 'error', error: { code: -32602 } });
    expect(calls(second)).toBe(before);
  });
});
