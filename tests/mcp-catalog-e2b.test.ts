// An imported npm MCP server on the e2b provider (the real E2B SDK against the fake E2B server):
// every sandbox is a VM of its own, so the tools service installs the package inside the
// server's own sandbox (from `[skills] npm_registry` only, once per sandbox: a marker file) and
// runs it there with node; the build row records it like a local build. The server sees its
// secret environment variable; no card and no log line holds the secret. A refresh reuses the
// installed package instead of downloading it again.
import { createHash, randomBytes } from 'node:crypto';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createClient, type Client } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import { createSecretBox } from '@toolmesh/store';
import { startPackageIndex, type McpStdioBundle, type PackageIndex } from '@toolmesh/testing';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { ENV_MCP_PKG, envMcpNpmPackage, publishEnvMcp } from './support/env-mcp-package.ts';
import { PROVIDER_SETUPS } from './support/sandbox-providers.ts';

const e2b = PROVIDER_SETUPS.find((s) => s.name === 'e2b')!;
const SECRETS_KEY = randomBytes(32).toString('base64');
const PKG_TOKEN = `ptok-${randomBytes(8).toString('hex')}`;
const PKG = ENV_MCP_PKG;

let api: TestApi;
let tools: ToolsService;
let index: PackageIndex;
let bundle: McpStdioBundle;
let nc: NatsConnection;
let client: Client;
let project: { id: string; key: string };
const toolLogs: string[] = [];

const entry = {
  name: 'io.github.acme/env-mcp',
  description: 'Tells what its environment holds',
  version: '1.0.0',
  packages: [envMcpNpmPackage('e2b', { registryBaseUrl: 'https://npm.acme.example' })],
};

beforeAll(async () => {
  index = await startPackageIndex();
  bundle = await publishEnvMcp(index);
  api = await startTestApi({
    ...(await e2b.env()),
    CG__SECRETS__KEY: SECRETS_KEY,
    CG__TOOLS__HEALTH_PORT: '0',
    CG__SKILLS__NPM_REGISTRY: index.npmUrl,
  });
  const sink = { write: (line: string) => void toolLogs.push(line) };
  tools = await startToolsService(
    loadConfig({ env: api.serviceEnv('tools') }),
    pino({ level: 'debug' }, sink),
  );
  nc = await api.nats.connect('admin');
  client = createClient({ nc, root: api.config.nats.subject_root });
  project = await api.createProject();
  const box = createSecretBox(SECRETS_KEY);
  await api.store.secrets.put(
    project.id,
    'pkg_token',
    box.seal(project.id, 'pkg_token', PKG_TOKEN),
  );
}, 120_000);

afterAll(async () => {
  await tools?.stop(1_000);
  await client?.close();
  await nc?.close();
  await api?.close();
  await e2b.close();
  await index?.close();
  await bundle?.cleanup();
});

const tarballHits = () =>
  index.requests().filter((p) => p.startsWith('/files/@acme__env-mcp')).length;

const whoami = async () => {
  const r = await client.callTool({
    project: project.id,
    channel: 'main',
    tool: 'env-mcp.whoami',
    arguments: {},
    timeoutMs: 120_000,
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  const text = (r.content.result as { content: { text: string }[] }).content[0]!.text;
  return { r, facts: JSON.parse(text) as Record<string, unknown> };
};

it('installs the package inside the server sandbox and runs it there', async () => {
  const res = await api.request('POST', `/v1/projects/${project.id}/mcp-servers/import`, {
    key: project.key,
    body: { server: entry, secrets: { CATALOG_TOKEN: 'pkg_token' } },
  });
  expect(res.status, res.raw).toBe(201);
  expect(res.body).toMatchObject({
    name: 'env-mcp',
    transport: 'stdio',
    state: 'connected',
    package: { registry_type: 'npm', identifier: PKG, version: '1.0.0' },
  });
  expect(res.body.refresh.added).toEqual(['env-mcp.whoami']);
  // The entry's own registry is not reached: the install comes from the deployment's.
  expect(res.body.import.warnings).toEqual([
    expect.stringContaining('registryBaseUrl https://npm.acme.example is not used'),
  ]);
  expect(tarballHits()).toBe(1);

  const { r, facts } = await whoami();
  expect(facts).toMatchObject({
    token_sha256: createHash('sha256').update(PKG_TOKEN).digest('hex'),
    greeting: 'hello',
    args: ['--mode', 'e2b'],
  });
  expect(facts['token']).toBe('[redacted]');
  expect(JSON.stringify(r)).not.toContain(PKG_TOKEN);
  expect(toolLogs.join('')).not.toContain(PKG_TOKEN);

  // The build is recorded like a local one: one ready row for this version, built once.
  const rows = await api.store.skillEnvs.listForSkill(project.id, `mcp-npm:${PKG}`);
  expect(rows).toMatchObject([{ provider: 'e2b', status: 'ready', kinds: ['node'], builds: 1 }]);
}, 180_000);

it('keeps using the installed package when the server is refreshed', async () => {
  const refreshed = await api.request(
    'POST',
    `/v1/projects/${project.id}/mcp-servers/env-mcp/refresh`,
    { key: project.key },
  );
  expect(refreshed.status, refreshed.raw).toBe(200);
  const { facts } = await whoami();
  expect(facts).toMatchObject({ greeting: 'hello' });
  expect(tarballHits()).toBe(1);
}, 120_000);
