// The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, `--suite all`,
// the 2025-11-25 wire) against the everything fixture server directly, then against the same
// server registered in a project and reached through the mesh at its own endpoint
// (/v1/projects/:p/mcp-servers/everything/mcp). The suite's CLI sends no credentials, so it
// talks to a small local proxy that adds the project's key, as a reverse proxy in front of the
// api would; the api allows that proxy's host:port ([api] allowed_hosts). Per-scenario results
// are written to conformance-results.json and .md beside this file. Every scenario that passes
// directly must pass through the mesh, except the ones in GAPS, which must still fail (a gap
// closed without updating the list fails the test too).
import { execFile } from 'node:child_process';
import { mkdtemp, readFile, readdir, rm, writeFile } from 'node:fs/promises';
import { createServer, request, type Server } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { freePort, startMcpEverythingServer, type McpEverythingFixture } from '@toolmesh/testing';
import { startToolsService, type ToolsService } from '../../services/tools/src/app.ts';
import { startFacadeMesh, type FacadeMesh } from './support.ts';

const run = promisify(execFile);
const CLI = join(import.meta.dirname, '../../node_modules/.bin/conformance');
const SUITE_VERSION = '0.1.16';

/**
 * Scenarios the fixture passes directly that the mesh does not pass yet, and why. Each must
 * still fail through the mesh: remove it here when it passes.
 */
const GAPS: Record<string, string> = {};

type Outcome = { passed: boolean; checks: { id: string; status: string; error?: string }[] };

/** Runs the suite against a URL; the outcome of each scenario from its checks.json. */
async function runSuite(url: string): Promise<Record<string, Outcome>> {
  const dir = await mkdtemp(join(tmpdir(), 'conformance-'));
  try {
    // Exit 1 when a scenario fails: the checks say which.
    await run(CLI, ['server', '--url', url, '--suite', 'all', '-o', dir], {
      cwd: dir,
      timeout: 300_000,
    }).catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== 1) throw err;
    });
    const out: Record<string, Outcome> = {};
    for (const entry of await readdir(dir)) {
      const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
      const checks = JSON.parse(await readFile(join(dir, entry, 'checks.json'), 'utf8')) as {
        id: string;
        status: string;
        errorMessage?: string;
      }[];
      out[scenario] = {
        passed: !checks.some((c) => c.status === 'FAILURE'),
        checks: checks.map((c) => ({
          id: c.id,
          status: c.status,
          ...(c.errorMessage ? { error: c.errorMessage.slice(0, 300) } : {}),
        })),
      };
    }
    return out;
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

/** A reverse proxy that adds a bearer token: the suite's CLI sends none. */
async function startKeyProxy(port: number, target: URL, key: string): Promise<Server> {
  const server = createServer((req, res) => {
    const upstream = request(
      {
        host: target.hostname,
        port: target.port,
        method: req.method,
        path: target.pathname,
        headers: { ...req.headers, authorization: `Bearer ${key}` },
      },
      (up) => {
        res.writeHead(up.statusCode ?? 502, up.headers);
        up.pipe(res);
      },
    );
    upstream.on('error', () => res.destroy());
    req.pipe(upstream);
    res.on('close', () => upstream.destroy());
  });
  await new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve));
  return server;
}

let mesh: FacadeMesh;
let fixture: McpEverythingFixture;
let tools: ToolsService;
let proxy: Server;
let proxyPort: number;
beforeAll(async () => {
  fixture = await startMcpEverythingServer();
  proxyPort = await freePort();
  mesh = await startFacadeMesh(
    {
      CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
      CG__TOOLS__HEALTH_PORT: '0',
      CG__API__ALLOWED_HOSTS: `["127.0.0.1:${proxyPort}"]`,
    },
    { skills: false },
  );
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: mesh.api.config.log.level }),
  );
  const res = await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/mcp-servers`, {
    key: mesh.project.key,
    body: { name: 'everything', transport: 'http', url: fixture.url },
  });
  if (res.status !== 201) throw new Error(`registering the fixture failed: ${res.raw}`);
  proxy = await startKeyProxy(
    proxyPort,
    mesh.serverUrl(mesh.project.id, 'everything'),
    mesh.project.key,
  );
}, 120_000);
afterAll(async () => {
  proxy?.closeAllConnections();
  await new Promise((r) => proxy?.close(r));
  await tools?.stop(1_000);
  await fixture?.stop();
  await mesh?.close();
});

describe(`conformance suite ${SUITE_VERSION} (--suite all)`, () => {
  it('every scenario the fixture passes directly passes through the mesh', async () => {
    const direct = await runSuite(fixture.url);
    const through = await runSuite(`http://127.0.0.1:${proxyPort}/mcp`);
    const scenarios = Object.keys(direct).sort();
    const rows = scenarios.map((s) => ({
      scenario: s,
      direct: direct[s]!.passed,
      mesh: through[s]?.passed ?? false,
      gap: GAPS[s],
      failures: (through[s]?.checks ?? []).filter((c) => c.status === 'FAILURE'),
    }));
    await writeFile(
      join(import.meta.dirname, 'conformance-results.json'),
      `${JSON.stringify({ suite: SUITE_VERSION, wire: '2025-11-25', scenarios: rows }, null, 2)}\n`,
    );
    await writeFile(
      join(import.meta.dirname, 'conformance-results.md'),
      [
        `# MCP conformance ${SUITE_VERSION} (--suite all, 2025-11-25): the everything fixture`,
        '',
        'Written by conformance.test.ts. "mesh" is the fixture registered in a project and',
        'reached at /v1/projects/:p/mcp-servers/everything/mcp.',
        '',
        '| scenario | direct | through the mesh | note |',
        '| --- | --- | --- | --- |',
        ...rows.map(
          (r) =>
            `| ${r.scenario} | ${r.direct ? 'pass' : 'fail'} | ${r.mesh ? 'pass' : 'fail'} | ${
              r.gap ??
              r.failures
                .map((f) => f.error ?? f.id)
                .join('; ')
                .replaceAll('|', '\\|')
            } |`,
        ),
        '',
      ].join('\n'),
    );
    expect(scenarios.length).toBeGreaterThanOrEqual(30);
    // The fixture passes every scenario on its own: a failure here is the fixture's.
    expect(scenarios.filter((s) => !direct[s]!.passed)).toEqual([]);
    const regressions = rows.filter((r) => r.direct && !r.mesh && !r.gap).map((r) => r.scenario);
    const stale = rows.filter((r) => r.mesh && r.gap).map((r) => r.scenario);
    expect({ regressions, stale }).toEqual({ regressions: [], stale: [] });
  }, 600_000);
});
