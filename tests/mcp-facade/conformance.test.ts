// The official MCP conformance suite (@modelcontextprotocol/conformance 0.1.16, `--suite all`,
// the 2025-11-25 wire) against the everything fixture server directly, then against the same
// server registered in a project and reached through the mesh at its own endpoint
// (/v1/projects/:p/mcp-servers/everything/mcp). The suite's CLI sends no credentials, so it
// talks to a small local proxy that adds the project's key, as a reverse proxy in front of the
// api would; the api allows that proxy's host:port ([api] allowed_hosts). Per-scenario results
// are written to conformance-results.json and .md beside this file. Every scenario that passes
// directly must pass through the mesh, except the ones in GAPS, which must still fail (a gap
// closed without updating the list fails the test too). On 2026-07-28 that includes the Tasks
// scenarios (io.modelcontextprotocol/tasks): the fixture serves Tasks of its own, and through the
// mesh each task the fixture makes of a call is the mesh's durable task (docs/mcp.md).
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
// Both lines install a `conformance` bin: each is run by its own entry point.
const MODULES = join(import.meta.dirname, '../../node_modules');
const SUITES = {
  '2025-11-25': {
    version: '0.1.16',
    cli: join(MODULES, '@modelcontextprotocol/conformance/dist/index.js'),
    args: ['--suite', 'all'],
    results: 'conformance-results',
  },
  // The 0.2.0 alpha line, as the npm alias conformance-next.
  '2026-07-28': {
    version: '0.2.0-alpha.12',
    cli: join(MODULES, 'conformance-next/dist/index.js'),
    args: ['--requirements', '2026-07-28'],
    results: 'conformance-results-2026-07-28',
  },
} as const;
type Wire = keyof typeof SUITES;

/**
 * Scenarios the fixture passes directly that the mesh does not pass yet, and why. Each must
 * still fail through the mesh: remove it here when it passes.
 */
const GAPS: Record<Wire, Record<string, string>> = { '2025-11-25': {}, '2026-07-28': {} };

type Outcome = { passed: boolean; checks: { id: string; status: string; error?: string }[] };

/** Runs the suite against a URL; the outcome of each scenario from its checks.json. */
async function runSuite(wire: Wire, url: string): Promise<Record<string, Outcome>> {
  const dir = await mkdtemp(join(tmpdir(), 'conformance-'));
  const suite = SUITES[wire];
  try {
    // Exit 1 when a scenario fails: the checks say which.
    await run(process.execPath, [suite.cli, 'server', '--url', url, ...suite.args, '-o', dir], {
      cwd: dir,
      timeout: 300_000,
    }).catch((err: unknown) => {
      if ((err as { code?: unknown }).code !== 1) throw err;
    });
    const out: Record<string, Outcome> = {};
    for (const entry of await readdir(dir)) {
      const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
      // A scenario the suite skipped (not applicable on this wire) leaves no checks.
      const file = await readFile(join(dir, entry, 'checks.json'), 'utf8').catch(() => undefined);
      if (file === undefined) continue;
      const checks = JSON.parse(file) as {
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

async function compare(wire: Wire) {
  const suite = SUITES[wire];
  const gaps = GAPS[wire];
  const direct = await runSuite(wire, fixture.url);
  const through = await runSuite(wire, `http://127.0.0.1:${proxyPort}/mcp`);
  const scenarios = [...new Set([...Object.keys(direct), ...Object.keys(through)])].sort();
  const rows = scenarios.map((s) => ({
    scenario: s,
    direct: direct[s]?.passed ?? false,
    mesh: through[s]?.passed ?? false,
    gap: gaps[s],
    failures: (through[s]?.checks ?? []).filter((c) => c.status === 'FAILURE'),
    directFailures: (direct[s]?.checks ?? []).filter((c) => c.status === 'FAILURE'),
  }));
  const note = (fs: { id: string; error?: string }[]) =>
    fs
      .map((f) => f.error ?? f.id)
      .join('; ')
      .replaceAll('|', '\\|')
      .replaceAll('\n', ' ')
      .slice(0, 200);
  await writeFile(
    join(import.meta.dirname, `${suite.results}.json`),
    `${JSON.stringify({ suite: suite.version, wire, scenarios: rows }, null, 2)}\n`,
  );
  await writeFile(
    join(import.meta.dirname, `${suite.results}.md`),
    [
      `# MCP conformance ${suite.version} (${suite.args.join(' ')}, ${wire}): the everything fixture`,
      '',
      'Written by conformance.test.ts. "mesh" is the fixture registered in a project and',
      'reached at /v1/projects/:p/mcp-servers/everything/mcp.',
      '',
      // Written anew by every run: left as written by the formatter too.
      '<!-- prettier-ignore-start -->',
      '| scenario | direct | through the mesh | note |',
      '| --- | --- | --- | --- |',
      ...rows.map(
        (r) =>
          `| ${r.scenario} | ${r.direct ? 'pass' : 'fail'} | ${r.mesh ? 'pass' : 'fail'} | ${
            r.gap ?? note(r.mesh ? r.directFailures : r.failures)
          } |`,
      ),
      '<!-- prettier-ignore-end -->',
      '',
    ].join('\n'),
  );
  return { rows, direct };
}

describe('the official conformance suite, directly and through the mesh', () => {
  it('2025-11-25 (0.1.16, --suite all): every scenario passes directly and through the mesh', async () => {
    const { rows, direct } = await compare('2025-11-25');
    expect(rows.length).toBeGreaterThanOrEqual(30);
    // The fixture passes every scenario on its own: a failure here is the fixture's.
    expect(Object.keys(direct).filter((s) => !direct[s]!.passed)).toEqual([]);
    const regressions = rows.filter((r) => r.direct && !r.mesh && !r.gap).map((r) => r.scenario);
    const stale = rows.filter((r) => r.mesh && r.gap).map((r) => r.scenario);
    expect({ regressions, stale }).toEqual({ regressions: [], stale: [] });
  }, 600_000);

  it('2026-07-28 (0.2.0 alpha, --requirements 2026-07-28): what passes directly passes through the mesh', async () => {
    const { rows } = await compare('2026-07-28');
    expect(rows.length).toBeGreaterThan(0);
    // The fixture speaks the revision (mcp-everything-modern.ts), Tasks included
    // (mcp-everything-tasks.ts): every scenario passes directly.
    expect(rows.filter((r) => !r.direct).map((r) => r.scenario)).toEqual([]);
    const tasks = rows.filter((r) => r.scenario.startsWith('tasks-'));
    expect(tasks.length).toBeGreaterThanOrEqual(9);
    const regressions = rows.filter((r) => r.direct && !r.mesh && !r.gap).map((r) => r.scenario);
    const stale = rows.filter((r) => r.mesh && r.gap).map((r) => r.scenario);
    expect({ regressions, stale }).toEqual({ regressions: [], stale: [] });
    // Through the mesh the Tasks were the mesh's own: each a call on the bus with one card,
    // recorded as a durable task (state.mcp_tasks), its id the tool_call_id.
    const recorded = await mesh.api.store.mcpTasks.list(mesh.project.id, { limit: 500 });
    const tools = new Set<string>();
    for (const t of recorded) {
      const e = await mesh.api.store.executions.get(mesh.project.id, t.task_id);
      if (e) tools.add(e.tool_name);
    }
    for (const tool of ['slow_compute', 'failing_job', 'confirm_delete', 'multi_input']) {
      expect(tools).toContain(`everything.${tool}`);
    }
    // greet is never a task: the server decides, and answered it in the request.
    expect(tools).not.toContain('everything.greet');
    // What the fixture's tasks asked (elicitation) waited as durable input requests, answered
    // by the suite's tasks/update.
    const answered = await mesh.api.store.inputRequests.list(mesh.project.id, {
      status: 'answered',
      limit: 100,
    });
    expect(answered.map((r) => r.tool_name)).toEqual(
      expect.arrayContaining(['everything.confirm_delete', 'everything.multi_input']),
    );
  }, 600_000);
});
