// What an MCP server asks its client during a call (sampling/createMessage, elicitation/create)
// reaches the facade client that made the call, on that request's stream (2025-11-25), and the
// answer goes back to the server; the call is still a mesh call with one card. Nobody to ask (a
// client without the capability, a call made over the bus) is a clear refusal the server sees for
// sampling; an elicitation then waits as an input request (input-requests.test.ts).
// No project's bus credential can listen for another's questions or forge a passthrough request.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import {
  CreateMessageRequestSchema,
  ElicitRequestSchema,
  type ClientCapabilities,
} from '@modelcontextprotocol/sdk/types.js';
import {
  allowViolations,
  startMcpEverythingServer,
  type McpEverythingFixture,
} from '@toolmesh/testing';
import { encodeMessage } from '@toolmesh/protocol';
import type { ToolsService } from '../../services/tools/src/app.ts';
import { startFacadeMeshWithTools, type FacadeMesh } from './support.ts';

let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let tools: ToolsService;
let other: { id: string; key: string };
const clients: Client[] = [];
beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  ({ mesh, tools, other } = await startFacadeMeshWithTools());
  for (const p of [mesh.project, other]) {
    const res = await mesh.api.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
      key: p.key,
      body: { name: 'everything', transport: 'http', url: fixture.url },
    });
    if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  }
}, 120_000);
afterAll(async () => {
  for (const c of clients) await c.close().catch(() => undefined);
  await tools?.stop(1_000);
  await fixture?.stop();
  await mesh?.close();
});

async function connect(capabilities: ClientCapabilities): Promise<Client> {
  const client = new Client({ name: 'asked', version: '1.0.0' }, { capabilities });
  await client.connect(
    new StreamableHTTPClientTransport(mesh.serverUrl(mesh.project.id, 'everything'), {
      requestInit: { headers: { authorization: `Bearer ${mesh.project.key}` } },
    }),
  );
  clients.push(client);
  return client;
}

const textOf = (r: Record<string, unknown>) =>
  ((r['content'] ?? []) as { type: string; text?: string }[]).map((c) => c.text ?? '').join('');

describe("an MCP server's questions during a call", () => {
  it('sampling reaches the client that made the call; its answer goes back', async () => {
    const client = await connect({ sampling: {} });
    const asked: unknown[] = [];
    client.setRequestHandler(CreateMessageRequestSchema, (req) => {
      asked.push(req.params.messages);
      const said = req.params.messages[0]?.content as { text?: string } | undefined;
      return {
        model: 'test-model',
        role: 'assistant',
        content: { type: 'text', text: `echo ${said?.text ?? '?'}` },
      };
    });
    const res = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'hello' } });
    expect(textOf(res)).toBe('LLM response: echo hello');
    expect(asked).toEqual([[{ role: 'user', content: { type: 'text', text: 'hello' } }]]);
    const id = res._meta?.['io.toolmesh/tool-call-id'] as string;
    expect(await mesh.api.store.cards.countToolResults(mesh.project.id, id)).toBe(1);
  });

  it('elicitation reaches the client; its answer goes back', async () => {
    const client = await connect({ elicitation: {} });
    client.setRequestHandler(ElicitRequestSchema, (req) => {
      expect(req.params.message).toBe('Your name?');
      return { action: 'accept', content: { response: 'Ada' } };
    });
    const res = await client.callTool({
      name: 'test_elicitation',
      arguments: { message: 'Your name?' },
    });
    expect(textOf(res)).toBe('User response: action=accept, content={"response":"Ada"}');
  });

  it('a client without the capability is not asked: the server is refused', async () => {
    const client = await connect({});
    const res = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'x' } });
    expect(textOf(res)).toMatch(/^Sampling not supported or error: .*did not declare sampling/);
  });

  it('a call over the bus has nobody to ask: its sampling is refused', async () => {
    // (An elicitation waits as an input request instead: input-requests.test.ts.)
    const r = await mesh.client.callTool(
      {
        project: mesh.project.id,
        channel: 'main',
        tool: 'everything.test_sampling',
        arguments: { prompt: 'anyone?' },
      },
      { waitMs: 30_000 },
    );
    expect(r.content.status).toBe('succeeded');
    expect(JSON.stringify(r.content.result)).toMatch(
      /sampling_unavailable: no MCP client is waiting for this call/,
    );
  });

  it("no project's bus credential can hear another's questions or send passthrough requests", async () => {
    const refused: string[] = [];
    allowViolations((v) => {
      if (v.service !== undefined) return false;
      refused.push(v.kind);
      return true;
    });
    const nc = await mesh.api.nats.connectProject(other.id);
    const errors: string[] = [];
    void (async () => {
      for await (const s of nc.status()) if (s.type === 'error') errors.push(s.error.message);
    })();
    const root = mesh.api.config.nats.subject_root;
    const heard: string[] = [];
    for (const p of [mesh.project.id, other.id]) {
      nc.subscribe(`${root}.v1.${p}.*.ctl.ask.>`, {
        callback: (e, m) => {
          if (!e) heard.push(m.subject);
        },
      });
    }
    nc.publish(
      `${root}.v1.${mesh.project.id}.sys.ctl.mcp.everything.rpc`,
      encodeMessage('mcp_rpc', { v: 1, method: 'resources/list', params: {} }),
    );
    await nc.flush();
    // This project's call asks its client meanwhile: nobody else hears it.
    const client = await connect({ sampling: {} });
    client.setRequestHandler(CreateMessageRequestSchema, () => ({
      model: 'm',
      role: 'assistant',
      content: { type: 'text', text: 'mine' },
    }));
    const res = await client.callTool({ name: 'test_sampling', arguments: { prompt: 'secret' } });
    expect(textOf(res)).toBe('LLM response: mine');
    await expect.poll(() => errors.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(3);
    expect(errors.join('\n')).toMatch(/Permissions Violation for Subscription/i);
    expect(errors.join('\n')).toMatch(/Permissions Violation for Publish/i);
    expect(heard).toEqual([]);
    await nc.close();
  });
});
