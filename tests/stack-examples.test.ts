// What `pnpm stack` sets beyond the embedded defaults. By default a project's HTTP tools and MCP
// servers reach no private address, loopback included, as in every deployment: loopback holds
// the stack's own api, health ports, NATS and Postgres, shared by every project. `pnpm stack
// --allow-loopback` lets them reach 127.0.0.1 and localhost, for a developer's own servers; a
// refusal names that flag, in words that say nothing of the deployment.
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { randomUUID } from 'node:crypto';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { localStackSettings } from '../scripts/stack-examples.ts';
import { parseStackArgs } from '../scripts/stack-args.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { startToolsMesh, type ToolsMesh } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

const settings = (env: Record<string, string>, allowLoopback: boolean) =>
  localStackSettings(loadConfig({ env }), REPO_ROOT, env, { allowLoopback });

describe('pnpm stack settings', () => {
  it('refuse loopback by default, and say how to allow it', () => {
    const s = settings({}, false);
    expect(s.env['CG__TOOLS__ALLOWED_PRIVATE_HOSTS']).toBeUndefined();
    expect(s.lines[0]).toContain('may not reach loopback');
    expect(s.lines[0]).toContain('`pnpm stack --allow-loopback`');
    expect(s.env['CG__CATALOG__DIR']).toBe(join(REPO_ROOT, 'examples', 'mcp-catalog'));
  });

  it('allow 127.0.0.1 and localhost with --allow-loopback, and say what that opens', () => {
    const s = settings({}, true);
    expect(JSON.parse(s.env['CG__TOOLS__ALLOWED_PRIVATE_HOSTS']!)).toEqual([
      '127.0.0.1',
      'localhost',
    ]);
    expect(s.lines[0]).toContain("this stack's own ports included (--allow-loopback");
  });

  it('keep the hosts config.toml or the environment lists, with the flag or without', () => {
    const env = { CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["10.0.0.12"]', CG__CATALOG__DIR: '' };
    const strict = settings(env, false);
    expect(strict.env).toEqual({}); // the given list stands; no catalog where '' was asked
    expect(strict.lines).toEqual([
      'HTTP tools and MCP servers may reach no private address but 10.0.0.12 ([tools] allowed_private_hosts), as in a deployment (`pnpm stack --allow-loopback` lets them reach servers on this machine)',
    ]);
    expect(JSON.parse(settings(env, true).env['CG__TOOLS__ALLOWED_PRIVATE_HOSTS']!)).toEqual([
      '10.0.0.12',
      '127.0.0.1',
      'localhost',
    ]);
  });
});

describe('pnpm stack flags', () => {
  it('parses each flag, and refuses one it does not know', () => {
    expect(parseStackArgs([])).toEqual({
      once: false,
      cluster: false,
      json: false,
      allowLoopback: false,
      help: false,
    });
    expect(parseStackArgs(['--allow-loopback', '--once']).allowLoopback).toBe(true);
    expect(() => parseStackArgs(['--allow-loopbak'])).toThrow(/--allow-loopbak/);
  });

  it('--help lists --allow-loopback and exits 0; a mistyped flag exits 2 before anything starts', async () => {
    const run = async (args: string[]) => {
      const child = spawn(process.execPath, [join(REPO_ROOT, 'scripts/stack.ts'), ...args], {
        cwd: REPO_ROOT,
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      let out = '';
      child.stdout.on('data', (b: Buffer) => (out += b.toString()));
      child.stderr.on('data', (b: Buffer) => (out += b.toString()));
      const [code] = (await once(child, 'exit')) as [number | null];
      return { code, out };
    };
    const help = await run(['--help']);
    expect(help.code).toBe(0);
    expect(help.out).toMatch(/^ {2}--allow-loopback {2}let every project's HTTP tools/m);
    const typo = await run(['--allow-loopbak', '--once']);
    expect(typo.code, typo.out).toBe(2);
    expect(typo.out).toContain("Unknown option '--allow-loopbak'");
    expect(typo.out).toContain('usage: pnpm stack');
  });
});

describe('an HTTP tool at loopback, on the settings of pnpm stack', () => {
  let up: Upstream; // stands for what listens on the stack's loopback: its api, NATS, Postgres
  let strict: ToolsMesh;
  let open: ToolsMesh;
  beforeAll(async () => {
    up = await startUpstream();
    strict = await startToolsMesh(settings({}, false).env);
    open = await startToolsMesh(settings({}, true).env);
  }, 120_000);
  afterAll(async () => {
    await strict?.close();
    await open?.close();
    await up?.close();
  });

  async function call(mesh: ToolsMesh, url: string) {
    const p = await mesh.api.createProject();
    const res = await mesh.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: {
        name: `lb.t${randomUUID().slice(0, 8)}`,
        description: 'x',
        parameters: { type: 'object', properties: {} },
        kind: 'http',
        http: { method: 'GET', url },
      },
    });
    expect(res.status, res.raw).toBe(201);
    return mesh.client.callTool(
      { project: p.id, channel: 'test', tool: res.body.name as string },
      { waitMs: 30_000 },
    );
  }

  it.each(['127.0.0.1', 'localhost'])(
    'is refused by default (%s), the message naming --allow-loopback',
    async (host) => {
      const before = up.seen.length;
      const r = await call(strict, `http://${host}:${up.port}/echo/default`);
      expect(r.content.error?.code, JSON.stringify(r.content)).toBe('egress_denied');
      const resolved = host === '127.0.0.1' ? '' : ' \\([^)]*\\)';
      // The same words on any deployment: nothing of this one's settings, ports or paths.
      expect(r.content.error?.message).toMatch(
        new RegExp(
          `^egress to ${host}${resolved} is refused: not a public address; an operator may allow it in \\[tools\\] allowed_private_hosts; on a local \`pnpm stack\`, \`pnpm stack --allow-loopback\` allows 127\\.0\\.0\\.1 and localhost$`,
        ),
      );
      expect(up.seen.length).toBe(before);
    },
  );

  it('an MCP server at 127.0.0.1 is refused by default: state error, the refusal its last_error', async () => {
    const p = await strict.api.createProject();
    const before = up.seen.length;
    const res = await strict.request('POST', `/v1/projects/${p.id}/mcp-servers`, {
      key: p.key,
      body: { name: 'notes', transport: 'http', url: `http://127.0.0.1:${up.port}/mcp` },
    });
    expect(res.status, res.raw).toBeLessThan(300);
    expect(res.body.state, res.raw).toBe('error');
    expect(res.body.last_error, res.raw).toContain('`pnpm stack --allow-loopback`');
    expect(up.seen.length).toBe(before);
  });

  it.each(['127.0.0.1', 'localhost'])('reaches %s with --allow-loopback', async (host) => {
    const r = await call(open, `http://${host}:${up.port}/echo/allowed`);
    expect(r.content.error, JSON.stringify(r.content)).toBeUndefined();
    expect(up.hits('/echo/allowed')).toBeGreaterThan(0);
  });
});
