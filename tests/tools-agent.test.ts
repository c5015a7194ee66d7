// An agent uses a registry tool like any other: the api starts a task, the (scripted) model is
// offered the project's HTTP tool as a function, calls it, the tools service runs it against a
// real local upstream with a secret, the result wakes the agent, and the model submits what it
// saw. The same task also calls a tool of an MCP server (streamable HTTP, the official SDK's
// McpServer) the project registered, discovered by the tools service.
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { startMcpHttpServer, type McpHttpFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { newSecretsKey } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

let mesh: AgentMesh;
let tools: ToolsService;
let up: Upstream;
let mcp: McpHttpFixture;
beforeAll(async () => {
  up = await startUpstream();
  mcp = await startMcpHttpServer({ tools: ['echo'] });
  mesh = await startAgentMesh({
    CG__SECRETS__KEY: newSecretsKey(),
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: 'silent' }),
  );
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await tools?.stop();
  await mesh?.close();
  await up?.close();
  await mcp?.stop();
});

it('a task calls an HTTP tool and an MCP tool of the registry and submits its answer', async () => {
  const { id: project, key } = mesh.project;
  const put = await mesh.api.request('PUT', `/v1/projects/${project}/secrets/inventory_key`, {
    key,
    body: { value: 'inv-key-123' },
  });
  expect(put.status, put.raw).toBe(201);
  const reg = await mesh.api.request('POST', `/v1/projects/${project}/tools`, {
    key,
    body: {
      name: 'inventory.lookup',
      description: 'Look up an item of the inventory by its SKU',
      parameters: {
        type: 'object',
        properties: { sku: { type: 'string' } },
        required: ['sku'],
      },
      kind: 'http',
      http: {
        method: 'GET',
        url: `${up.url}/echo/items/{sku}`,
        auth: { type: 'header', secret: 'inventory_key', header: 'X-Inventory-Key' },
      },
    },
  });
  expect(reg.status, reg.raw).toBe(201);
  const server = await mesh.api.request('POST', `/v1/projects/${project}/mcp-servers`, {
    key,
    body: { name: 'kb', transport: 'http', url: mcp.url },
  });
  expect(server.body, server.raw).toMatchObject({ state: 'connected', tool_count: 1 });

  const agent = await mesh.createAgent({
    id: 'clerk',
    allowedTools: ['inventory.*', 'kb.*'],
    script: [
      {
        toolCalls: [
          { name: 'inventory__lookup', arguments: { sku: 'A-17' } },
          { name: 'kb__echo', arguments: { text: 'A-17 notes' } },
        ],
      },
      (req) => {
        const [http, kb] = req.body.messages
          .filter((m) => m.role === 'tool')
          .map((m) => JSON.parse(String(m.content)) as { result: any });
        return {
          toolCalls: [
            {
              name: 'submit_result',
              arguments: {
                result: { path: http!.result.path, note: kb!.result.content[0].text },
              },
            },
          ],
        };
      },
    ],
  });
  const taskId = await mesh.startTask(agent, 'Find item A-17.');
  const task = await mesh.finished(taskId, 60_000);
  expect(task.status, JSON.stringify(task)).toBe('succeeded');
  expect(task.final_card?.content).toMatchObject({
    result: { path: '/echo/items/A-17', note: 'echo: A-17 notes' },
  });

  const [first] = mesh.requestsOf(agent);
  expect(first!.body.tools!.map((t) => t.function.name)).toEqual(
    expect.arrayContaining(['inventory__lookup', 'kb__echo']),
  );
  expect(up.seen.at(-1)!.headers['x-inventory-key']).toBe('inv-key-123');
  const cards = JSON.stringify(await mesh.cards());
  expect(cards).not.toContain('inv-key-123');
});
