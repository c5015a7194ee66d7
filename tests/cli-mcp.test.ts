// `toolmesh mcp add|list|refresh|remove` as a user runs it: the CLI as a child process against
// a listening api and a tools service, with a real MCP server (streamable HTTP, official SDK)
// whose tool set changes between refreshes. Checked by output and exit code.
import { spawn } from 'node:child_process';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { FIXTURE_TOOLS, startMcpHttpServer, type McpHttpFixture } from '@toolmesh/testing';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { issueBusCreds } from './support/cli.ts';

const MAIN = join(import.meta.dirname, '..', 'packages/cli/src/main.ts');

let api: TestApi;
let tools: ToolsService;
let http: McpHttpFixture;
let sandboxRoot: string;
let env: Record<string, string>;

beforeAll(async () => {
  sandboxRoot = await mkdtemp(join(tmpdir(), 'toolmesh-cli-mcp-'));
  api = await startTestApi({
    CG__SANDBOX__ROOT_DIR: sandboxRoot,
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  tools = await startToolsService(
    loadConfig({ env: api.serviceEnv('tools') }),
    pino({ level: api.config.log.level }),
  );
  // Silent about tool changes: refreshes are asked for explicitly here (see 'announced').
  http = await startMcpHttpServer({ announce: false });
  const project = await api.createProject();
  const address = await api.app.listen({ host: '127.0.0.1', port: 0 });
  env = {
    PATH: process.env['PATH'] ?? '',
    TOOLMESH_API_URL: address,
    TOOLMESH_API_KEY: project.key,
    TOOLMESH_PROJECT: project.id,
    TOOLMESH_SUBJECT_ROOT: api.config.nats.subject_root,
    NATS_URL: api.env['CG__NATS__URL']!,
    TOOLMESH_BUS_CREDS: await issueBusCreds(api, project, sandboxRoot),
  };
}, 60_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await http?.stop();
  await api?.close();
  if (sandboxRoot) await rm(sandboxRoot, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

function toolmesh(args: string[]): Promise<Run> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env,
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

describe('toolmesh mcp', { timeout: 120_000 }, () => {
  it('add prints the tools found; list shows the server connected', async () => {
    const add = await toolmesh(['mcp', 'add', 'web', http.url, '--header', 'X-Client=cli']);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain(`web: connected, ${FIXTURE_TOOLS.length - 1} tools`);
    expect(add.stdout).toContain('  + web.echo');
    expect(add.stdout).toMatch(/ {2}! a name with spaces.*does not fit an id/);
    expect(http.requestHeaders.some((h) => h['x-client'] === 'cli')).toBe(true);

    const list = await toolmesh(['mcp', 'list', '--json']);
    expect(list.code, list.stderr).toBe(0);
    expect(JSON.parse(list.stdout).mcp_servers).toEqual([
      expect.objectContaining({
        name: 'web',
        transport: 'http',
        state: 'connected',
        tool_count: FIXTURE_TOOLS.length - 1,
      }),
    ]);
    const table = await toolmesh(['mcp', 'list']);
    expect(table.stdout).toMatch(
      new RegExp(`web\\s+http\\s+\\S+\\s+connected\\s+${FIXTURE_TOOLS.length - 1}\\s`),
    );

    const call = await toolmesh(['call', 'web.echo', '-a', '{"text":"via cli"}', '--json']);
    expect(call.code, call.stderr).toBe(0);
    expect(JSON.parse(call.stdout).content.result.content).toEqual([
      { type: 'text', text: 'echo: via cli' },
    ]);
  });

  it('refresh prints what changed: vanished tools disabled', async () => {
    http.setTools(['echo', 'stats']);
    const r = await toolmesh(['mcp', 'refresh', 'web']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('web: connected, 2 tools');
    expect(r.stdout).toContain('  - web.fail (disabled: the server no longer lists it)');
    http.setTools(FIXTURE_TOOLS);
    const back = await toolmesh(['mcp', 'refresh', 'web', '--json']);
    expect(back.code).toBe(0);
    expect(JSON.parse(back.stdout).refresh.updated).toContain('web.fail');
  });

  it('exits 1 with the reason when the server cannot be reached; 4 for an unknown server', async () => {
    const r = await toolmesh(['mcp', 'add', 'down', 'http://127.0.0.1:1/mcp']);
    expect(r.code).toBe(1);
    expect(r.stdout).toContain('down: error, 0 tools');
    expect(r.stderr).toContain('could not connect');
    expect((await toolmesh(['mcp', 'refresh', 'nope'])).code).toBe(4);
    expect((await toolmesh(['mcp', 'remove', 'nope'])).code).toBe(4);
  });

  it('exits 2 on usage errors', async () => {
    expect((await toolmesh(['mcp', 'add', 'x', 'https://a.example', 'extra'])).code).toBe(2);
    expect((await toolmesh(['mcp', 'add', 'x', 'node', '--header', 'A=b'])).code).toBe(2);
    expect(
      (await toolmesh(['mcp', 'add', 'x', 'https://a.example', '--header', 'nope'])).code,
    ).toBe(2);
  });

  it('remove deletes the server and its tools', async () => {
    const r = await toolmesh(['mcp', 'remove', 'web']);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain('removed MCP server web and its tools');
    const tools = await toolmesh(['tools', 'list', '--origin', 'mcp', '--json']);
    expect(JSON.parse(tools.stdout).tools).toEqual([]);
  });
});
