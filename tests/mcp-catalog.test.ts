// MCP servers from the MCP Registry's server.json format, end to end with real processes: the
// api imports an entry (inline or from the operator's catalog folder), the tools service
// discovers and calls its tools. A remote entry points at a real MCP server (the official SDK
// over streamable HTTP in this process) whose Authorization header is filled from a project
// secret; an npm entry names a package built here (the SDK server bundled into one file) and
// served by a local npm registry over node:http: the tools service installs it once per version
// in a build sandbox that reaches only that registry, mounts it read-only into the server's
// sandbox and runs it there, its declared environment variable taken from a project secret —
// visible to the server, never in a card or a log line. Bad entries are refused with codes, and
// another project's key is refused at each new route.
import { randomBytes } from 'node:crypto';
import { createHash } from 'node:crypto';
import { mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { NatsConnection } from '@nats-io/transport-node';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type Client } from '@toolmesh/client';
import { loadConfig } from '@toolmesh/config';
import { createSecretBox } from '@toolmesh/store';
import {
  startMcpHttpServer,
  startPackageIndex,
  type McpHttpFixture,
  type McpStdioBundle,
  type PackageIndex,
} from '@toolmesh/testing';
import { ADMIN_KEY, startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { runToolmesh } from './support/cli.ts';
import { ENV_MCP_PKG, envMcpNpmPackage, publishEnvMcp } from './support/env-mcp-package.ts';

const SECRETS_KEY = randomBytes(32).toString('base64');
const REMOTE_TOKEN = `rtok-${randomBytes(8).toString('hex')}`;
const PKG_TOKEN = `ptok-${randomBytes(8).toString('hex')}`;
const PKG = ENV_MCP_PKG;

let api: TestApi;
let tools: ToolsService;
let http: McpHttpFixture;
let index: PackageIndex;
let bundle: McpStdioBundle;
let nc: NatsConnection;
let client: Client;
let sandboxRoot: string;
let catalogDir: string;
let apiUrl: string;
let a: { id: string; key: string };
let b: { id: string; key: string };
const toolLogs: string[] = [];

const remoteEntry = (version = '1.0.0') => ({
  $schema: 'https://static.modelcontextprotocol.io/schemas/2025-09-29/server.schema.json',
  name: 'io.github.acme/fixture-remote',
  description: 'The fixture tools over streamable HTTP',
  version,
  remotes: [
    {
      type: 'streamable-http',
      url: http.url,
      headers: [
        {
          name: 'Authorization',
          description: 'Bearer token',
          isRequired: true,
          isSecret: true,
          value: 'Bearer {token}',
          variables: { token: { isSecret: true, isRequired: true } },
        },
        { name: 'X-Client', value: 'toolmesh-catalog' },
      ],
    },
  ],
});

const packageEntry = () => ({
  name: 'io.github.acme/env-mcp',
  description: 'Tells what its environment holds',
  version: '1.0.0',
  repository: { url: 'https://github.com/acme/env-mcp', source: 'github' },
  packages: [
    { registryType: 'pypi', identifier: 'env-mcp', version: '1.0.0', transport: { type: 'stdio' } },
    envMcpNpmPackage('catalog', {
      registryBaseUrl: 'https://registry.npmjs.org',
      runtimeHint: 'npx',
      runtimeArguments: [{ type: 'positional', value: '-y' }],
    }),
  ],
});

beforeAll(async () => {
  sandboxRoot = await mkdtemp(join(tmpdir(), 'toolmesh-catalog-sandboxes-'));
  catalogDir = await mkdtemp(join(tmpdir(), 'toolmesh-catalog-'));
  index = await startPackageIndex();
  bundle = await publishEnvMcp(index);
  http = await startMcpHttpServer({ announce: false });
  api = await startTestApi({
    CG__SANDBOX__ROOT_DIR: sandboxRoot,
    CG__SECRETS__KEY: SECRETS_KEY,
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
    CG__SKILLS__NPM_REGISTRY: index.npmUrl,
    CG__CATALOG__DIR: catalogDir,
  });
  const sink = { write: (line: string) => void toolLogs.push(line) };
  tools = await startToolsService(
    loadConfig({ env: api.serviceEnv('tools') }),
    pino({ level: 'debug' }, sink),
  );
  nc = await api.nats.connect('admin');
  client = createClient({ nc, root: api.config.nats.subject_root });
  a = await api.createProject();
  b = await api.createProject();
  const box = createSecretBox(SECRETS_KEY);
  for (const p of [a, b]) {
    await api.store.secrets.put(p.id, 'remote_token', box.seal(p.id, 'remote_token', REMOTE_TOKEN));
    await api.store.secrets.put(p.id, 'pkg_token', box.seal(p.id, 'pkg_token', PKG_TOKEN));
  }
  await writeFile(join(catalogDir, 'fixture-remote.json'), JSON.stringify(remoteEntry()));
  await writeFile(join(catalogDir, 'env-mcp.json'), JSON.stringify(packageEntry()));
  await writeFile(join(catalogDir, 'broken.json'), '{"name": "no-slash", "version": "1"}');
  apiUrl = await api.app.listen({ host: '127.0.0.1', port: 0 });
}, 120_000);
afterAll(async () => {
  await tools?.stop(1_000);
  await client?.close();
  await nc?.close();
  await http?.stop();
  await api?.close();
  await index?.close();
  await bundle?.cleanup();
  if (sandboxRoot) await rm(sandboxRoot, { recursive: true, force: true });
  if (catalogDir) await rm(catalogDir, { recursive: true, force: true });
});

const importServer = (body: unknown, project = a, key = project.key) =>
  api.request('POST', `/v1/projects/${project.id}/mcp-servers/import`, { key, body });

const call = (tool: string, project = a.id) =>
  client.callTool({ project, channel: 'main', tool, arguments: {}, timeoutMs: 60_000 });

const tarballHits = () =>
  index.requests().filter((p) => p.startsWith('/files/@acme__env-mcp')).length;

describe('a server.json with a remote', () => {
  it('refuses a required header without a secret, naming what is missing', async () => {
    const res = await importServer({ server: remoteEntry() });
    expect(res.status, res.raw).toBe(400);
    expect(res.body.error.code).toBe('missing_variables');
    expect(res.body.error.details.missing).toEqual([
      { name: 'token', kind: 'variable', is_secret: true },
    ]);
  });

  it('imports it as an http server: tools discovered, the header filled from the secret', async () => {
    const res = await importServer({ server: remoteEntry(), secrets: { token: 'remote_token' } });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({
      name: 'fixture-remote',
      transport: 'http',
      url: http.url,
      state: 'connected',
      header_names: ['X-Client'],
      secret_headers: { Authorization: ['remote_token'] },
      import_source: { name: 'io.github.acme/fixture-remote', version: '1.0.0' },
      import: {
        outcome: 'created',
        chosen: { kind: 'remote', index: 0, type: 'streamable-http' },
      },
    });
    expect(res.body.refresh.added).toContain('fixture-remote.echo');
    expect(res.raw).not.toContain(REMOTE_TOKEN);
    expect(http.requestHeaders.some((h) => h['authorization'] === `Bearer ${REMOTE_TOKEN}`)).toBe(
      true,
    );
    expect(http.requestHeaders.some((h) => h['x-client'] === 'toolmesh-catalog')).toBe(true);
  });

  it('runs a call through it', async () => {
    const r = await call('fixture-remote.echo');
    // echo requires text: the discovered schema is enforced first...
    expect(r.content.error?.code).toBe('invalid_arguments');
    const ok = await client.callTool({
      project: a.id,
      channel: 'main',
      tool: 'fixture-remote.echo',
      arguments: { text: 'via catalog' },
      timeoutMs: 30_000,
    });
    expect(ok.status, JSON.stringify(ok.content)).toBe('succeeded');
    expect(ok.content.result).toMatchObject({
      content: [{ type: 'text', text: 'echo: via catalog' }],
    });
  });

  it('updates the server when the same entry is imported again', async () => {
    const res = await importServer({
      server: remoteEntry('1.0.1'),
      secrets: { token: 'remote_token' },
    });
    expect(res.status, res.raw).toBe(200);
    expect(res.body).toMatchObject({
      name: 'fixture-remote',
      state: 'connected',
      import_source: { version: '1.0.1' },
      import: { outcome: 'updated' },
    });
    const list = await api.request('GET', `/v1/projects/${a.id}/mcp-servers`, { key: a.key });
    expect(
      list.body.mcp_servers.filter((s: { name: string }) => s.name === 'fixture-remote'),
    ).toHaveLength(1);
    // Under another name it is a conflict: the entry is already imported as fixture-remote.
    const renamed = await importServer({
      server: remoteEntry('1.0.2'),
      name: 'other',
      secrets: { token: 'remote_token' },
    });
    expect(renamed.status, renamed.raw).toBe(409);
    expect(renamed.body.error.code).toBe('conflict');
  });
});

describe('a server.json with an npm package', () => {
  it('refuses a required secret variable without a mapping', async () => {
    const res = await importServer({ server: packageEntry() });
    expect(res.status, res.raw).toBe(400);
    expect(res.body.error).toMatchObject({
      code: 'missing_variables',
      details: {
        missing: [
          {
            name: 'CATALOG_TOKEN',
            kind: 'environment_variable',
            is_secret: true,
            description: 'API token',
          },
        ],
      },
    });
    expect(tarballHits()).toBe(0);
  });

  it('installs the package once and runs it in the sandbox with the secret in its environment', async () => {
    const res = await importServer({
      server: packageEntry(),
      secrets: { CATALOG_TOKEN: 'pkg_token' },
    });
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({
      name: 'env-mcp',
      transport: 'stdio',
      command: 'node',
      args: ['--mode', 'catalog'],
      env_names: ['GREETING'],
      secret_env: { CATALOG_TOKEN: 'pkg_token' },
      package: { registry_type: 'npm', identifier: PKG, version: '1.0.0' },
      state: 'connected',
      import: { outcome: 'created', chosen: { kind: 'package', index: 1, type: 'npm:stdio' } },
    });
    expect(res.body.import.warnings).toEqual([expect.stringContaining('runtimeArguments')]);
    expect(res.body.refresh.added).toEqual(['env-mcp.whoami']);
    expect(tarballHits()).toBe(1);

    const r = await call('env-mcp.whoami');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const text = (r.content.result as { content: { text: string }[] }).content[0]!.text;
    const facts = JSON.parse(text) as Record<string, unknown>;
    // The server saw the secret (its digest matches) and the declared default and arguments...
    expect(facts).toMatchObject({
      token_sha256: createHash('sha256').update(PKG_TOKEN).digest('hex'),
      greeting: 'hello',
      args: ['--mode', 'catalog'],
    });
    // ...but the card carries no secret value.
    expect(facts['token']).toBe('[redacted]');
    const card = await api.request('GET', `/v1/projects/${a.id}/executions/${r.tool_call_id}`, {
      key: a.key,
    });
    expect(card.status, card.raw).toBe(200);
    expect(card.raw).not.toContain(PKG_TOKEN);
    expect(JSON.stringify(r)).not.toContain(PKG_TOKEN);
    expect(toolLogs.join('')).not.toContain(PKG_TOKEN);
    expect(toolLogs.join('')).not.toContain(REMOTE_TOKEN);

    // The install is a durable job row, ready, built once.
    const rows = await api.store.skillEnvs.listForSkill(a.id, `mcp-npm:${PKG}`);
    expect(rows).toMatchObject([{ status: 'ready', kinds: ['node'], builds: 1 }]);
  });

  it('mounts the install read-only into the server sandbox', async () => {
    const [row] = await api.store.skillEnvs.listForSkill(a.id, `mcp-npm:${PKG}`);
    const entry = (await readFile(`${row!.location!}/entry`, 'utf8')).trim();
    expect(entry).toBe(`node/node_modules/${PKG}/server.mjs`);
    // The server's sandbox (not the build's) was granted the folder, read-only.
    const metas = await Promise.all(
      (await readdir(sandboxRoot)).map((d) =>
        readFile(join(sandboxRoot, d, 'meta.json'), 'utf8').then(
          (t) => JSON.parse(t) as { readPaths?: string[] },
          (): { readPaths?: string[] } => ({}),
        ),
      ),
    );
    expect(metas.filter((m) => m.readPaths?.includes(row!.location!))).toHaveLength(1);
  });

  it('does not install again when the server is refreshed or re-imported', async () => {
    const refreshed = await api.request(
      'POST',
      `/v1/projects/${a.id}/mcp-servers/env-mcp/refresh`,
      {
        key: a.key,
      },
    );
    expect(refreshed.status, refreshed.raw).toBe(200);
    const again = await importServer({
      server: packageEntry(),
      secrets: { CATALOG_TOKEN: 'pkg_token' },
      variables: { GREETING: 'ahoy' },
    });
    expect(again.status, again.raw).toBe(200);
    expect(again.body.import.outcome).toBe('updated');
    const r = await call('env-mcp.whoami');
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const facts = JSON.parse(
      (r.content.result as { content: { text: string }[] }).content[0]!.text,
    ) as Record<string, unknown>;
    // The re-import restarted the server with the new value; the package was not fetched again.
    expect(facts['greeting']).toBe('ahoy');
    expect(tarballHits()).toBe(1);
  });
});

describe('the catalog', () => {
  it('lists the folder to the admin key and to project keys', async () => {
    for (const key of [ADMIN_KEY, a.key, b.key]) {
      const res = await api.request('GET', '/v1/catalog', { key });
      expect(res.status, res.raw).toBe(200);
      expect(res.body.configured).toBe(true);
      expect(res.body.entries).toEqual([
        {
          name: 'io.github.acme/env-mcp',
          description: 'Tells what its environment holds',
          version: '1.0.0',
          file: 'env-mcp.json',
          transports: ['pypi:stdio', 'npm:stdio'],
          required_variables: [
            {
              name: 'CATALOG_TOKEN',
              kind: 'environment_variable',
              is_secret: true,
              description: 'API token',
            },
          ],
        },
        {
          name: 'io.github.acme/fixture-remote',
          description: 'The fixture tools over streamable HTTP',
          version: '1.0.0',
          file: 'fixture-remote.json',
          transports: ['streamable-http'],
          required_variables: [],
        },
      ]);
      expect(res.body.invalid).toEqual([{ file: 'broken.json', error: expect.any(String) }]);
    }
    const anonymous = await api.request('GET', '/v1/catalog');
    expect(anonymous.status).toBe(401);
  });

  it('imports an entry by name into another project', async () => {
    const res = await importServer(
      {
        catalog: 'io.github.acme/fixture-remote',
        name: 'approved',
        secrets: { token: 'remote_token' },
      },
      b,
    );
    expect(res.status, res.raw).toBe(201);
    expect(res.body).toMatchObject({
      name: 'approved',
      state: 'connected',
      import_source: {
        name: 'io.github.acme/fixture-remote',
        catalog: 'io.github.acme/fixture-remote',
      },
    });
    const r = await client.callTool({
      project: b.id,
      channel: 'main',
      tool: 'approved.echo',
      arguments: { text: 'b' },
      timeoutMs: 30_000,
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');

    const missing = await importServer({ catalog: 'io.github.acme/nope' }, b);
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe('not_found');
  });

  it('works from the CLI: catalog list and mcp-servers import of a file and a catalog name', async () => {
    const env = { TOOLMESH_API_URL: apiUrl, TOOLMESH_API_KEY: b.key, TOOLMESH_PROJECT: b.id };
    const listed = await runToolmesh(['catalog', 'list'], env);
    expect(listed.code, listed.stderr).toBe(0);
    expect(listed.stdout).toContain('io.github.acme/env-mcp');
    expect(listed.stdout).toContain('CATALOG_TOKEN (secret)');
    expect(listed.stderr).toContain('broken.json');

    const file = join(catalogDir, '..', `remote-${randomBytes(4).toString('hex')}.json`);
    await writeFile(
      file,
      JSON.stringify({ server: { ...remoteEntry(), name: 'io.github.acme/cli-remote' } }),
    );
    try {
      const fromFile = await runToolmesh(
        ['mcp-servers', 'import', file, '--secret', 'token=remote_token'],
        env,
      );
      expect(fromFile.code, fromFile.stderr).toBe(0);
      expect(fromFile.stdout).toContain('created cli-remote from io.github.acme/cli-remote@1.0.0');
      expect(fromFile.stdout).toContain('+ cli-remote.echo');
    } finally {
      await rm(file, { force: true });
    }
    const fromCatalog = await runToolmesh(
      [
        'mcp-servers',
        'import',
        'io.github.acme/fixture-remote',
        '--name',
        'approved',
        '--secret',
        'token=remote_token',
      ],
      env,
    );
    expect(fromCatalog.code, fromCatalog.stderr).toBe(0);
    expect(fromCatalog.stdout).toContain('updated approved');
    const bad = await runToolmesh(['mcp-servers', 'import', 'io.github.acme/env-mcp'], env);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toContain('CATALOG_TOKEN');
  });
});

describe('bad entries', () => {
  const base = () => remoteEntry();
  const cases: [string, () => unknown, number, string][] = [
    [
      'an unsupported registryType',
      () => ({
        server: {
          name: 'io.github.acme/py',
          description: 'x',
          version: '1.0.0',
          packages: [
            {
              registryType: 'pypi',
              identifier: 'x',
              version: '1.0.0',
              transport: { type: 'stdio' },
            },
          ],
        },
      }),
      400,
      'unsupported_server',
    ],
    [
      'a package over streamable-http',
      () => ({
        server: {
          name: 'io.github.acme/npm-http',
          description: 'x',
          version: '1.0.0',
          packages: [
            {
              registryType: 'npm',
              identifier: 'x',
              version: '1.0.0',
              transport: { type: 'streamable-http', url: 'http://127.0.0.1:1/mcp' },
            },
          ],
        },
      }),
      400,
      'unsupported_server',
    ],
    [
      'neither remotes nor packages',
      () => ({ server: { name: 'io.github.acme/empty', description: 'x', version: '1.0.0' } }),
      400,
      'invalid_server_json',
    ],
    [
      'a name without a namespace',
      () => ({ server: { ...base(), name: 'weather' } }),
      400,
      'invalid_server_json',
    ],
    [
      'a remote URL that is not a URL',
      () => ({ server: { ...base(), remotes: [{ type: 'streamable-http', url: 'not a url' }] } }),
      400,
      'invalid_url',
    ],
    [
      'a remote URL that is not http(s)',
      () => ({ server: { ...base(), remotes: [{ type: 'sse', url: 'ftp://example.com/mcp' }] } }),
      400,
      'invalid_url',
    ],
    [
      'an unknown remote type',
      () => ({
        server: { ...base(), remotes: [{ type: 'websocket', url: 'https://example.com' }] },
      }),
      400,
      'invalid_server_json',
    ],
    [
      'a version range for a package',
      () => ({
        server: {
          ...packageEntry(),
          packages: [{ ...packageEntry().packages[1]!, version: '^1.0.0' }],
        },
        secrets: { CATALOG_TOKEN: 'pkg_token' },
      }),
      400,
      'invalid_server_json',
    ],
    [
      'version latest',
      () => ({
        server: {
          ...packageEntry(),
          packages: [{ ...packageEntry().packages[1]!, version: 'latest' }],
        },
      }),
      400,
      'invalid_server_json',
    ],
    [
      'a secret for an input the entry does not declare',
      () => ({ server: base(), secrets: { token: 'remote_token', NOPE: 'remote_token' } }),
      400,
      'invalid_request',
    ],
    [
      'a secret the project does not have',
      () => ({ server: base(), secrets: { token: 'absent' } }),
      400,
      'missing_secret',
    ],
    [
      'a secret input given as a plain variable',
      () => ({ server: base(), variables: { token: 'plain' } }),
      400,
      'invalid_request',
    ],
    [
      'both inline and catalog',
      () => ({ server: base(), catalog: 'io.github.acme/env-mcp' }),
      400,
      'invalid_request',
    ],
    ['neither inline nor catalog', () => ({ name: 'x' }), 400, 'invalid_request'],
    [
      'a reserved server name',
      () => ({ server: base(), name: 'builtin', secrets: { token: 'remote_token' } }),
      400,
      'reserved_name',
    ],
  ];
  for (const [what, body, status, code] of cases) {
    it(`refuses ${what} (${code})`, async () => {
      const res = await importServer(body());
      expect(res.status, res.raw).toBe(status);
      expect(res.body.error.code, res.raw).toBe(code);
    });
  }
});

describe('tenancy', () => {
  it("refuses another project's key at the import route", async () => {
    const res = await importServer(
      { server: remoteEntry(), secrets: { token: 'remote_token' } },
      a,
      b.key,
    );
    expect(res.status, res.raw).toBe(404);
    expect(res.body.error.code).toBe('not_found');
    const byCatalog = await importServer({ catalog: 'io.github.acme/fixture-remote' }, a, b.key);
    expect(byCatalog.status).toBe(404);
  });

  it('refuses a caller key at the import route, and a bad key at the catalog', async () => {
    const made = await api.request('POST', `/v1/projects/${a.id}/keys`, {
      key: a.key,
      body: { name: 'caller', role: 'caller' },
    });
    expect(made.status, made.raw).toBe(201);
    const res = await importServer({ catalog: 'io.github.acme/fixture-remote' }, a, made.body.key);
    expect(res.status).toBe(403);
    const bad = await api.request('GET', '/v1/catalog', { key: 'tmk_not-a-key' });
    expect(bad.status).toBe(401);
  });
});
