// `toolmesh` with no flags and no environment beside a running `pnpm stack`: the launcher that
// setup.sh puts on PATH, run from a folder inside a checkout whose .data holds the stack's
// stack.json and stack.pid, finds the stack's api, NATS server, project, key and bus credential,
// says which stack it uses, and calls a tool; the SDK's connectMesh() and `toolmesh mcp serve`
// do the same. Flags and variables win over the stack. The local project is made as `pnpm
// stack` makes it (scripts/stack-local.ts), against a real api and tools service. Also: the
// projects, keys, profiles and bus-credentials commands (another project's key refused), and the
// words a refused connection or a server without toolmesh's streams gets.
import { execFile, spawn } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { connectMesh } from '@toolmesh/client';
import { startLocalNats, type LocalNats } from '@toolmesh/testing';
import { ADMIN_KEY } from '../services/api/src/test/support.ts';
import { ensureLocalProject } from '../scripts/stack-local.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

const exec = promisify(execFile);

let mesh: SkillsMesh;
let tmp: string;
let checkout: string;
let data: string;
let bin: string;
let apiUrl: string;
let project: string;
let stackJson: Record<string, unknown>;

beforeAll(async () => {
  // builtin.echo is answered by the skills service.
  mesh = await startSkillsMesh();
  await mesh.startSkills();
  tmp = await mkdtemp(join(tmpdir(), 'toolmesh-local-stack-'));
  // A checkout as `pnpm stack` leaves it while it runs: .data/stack.json and .data/stack.pid.
  checkout = join(tmp, 'checkout');
  data = join(checkout, '.data');
  await mkdir(join(checkout, 'some', 'folder'), { recursive: true });
  await mkdir(data, { recursive: true });
  apiUrl = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
  project = `local-${Date.now().toString(36)}`;
  const local = await ensureLocalProject({ apiUrl, adminKey: ADMIN_KEY, dir: data, project });
  stackJson = {
    natsUrl: mesh.api.env['CG__NATS__URL'],
    root: mesh.api.config.nats.subject_root,
    apiUrl,
    adminKey: ADMIN_KEY,
    model: 'none',
    ...local,
    consoleUrl: `${apiUrl}/console`,
  };
  await writeFile(join(data, 'stack.json'), JSON.stringify(stackJson), { mode: 0o600 });
  // This test process stands for the stack's: alive while the test runs.
  await writeFile(join(data, 'stack.pid'), `${process.pid}\n`);
  // setup.sh's link step, into a bin folder of the test's own.
  bin = join(tmp, 'bin');
  await exec('bash', [join(REPO_ROOT, 'scripts/install-cli.sh'), bin]);
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** `toolmesh <args>` as a user types it: the launcher on PATH, no other variable, in `cwd`. */
function toolmesh(args: string[], cwd: string, env: Record<string, string> = {}): Promise<Run> {
  const child = spawn('toolmesh', args, {
    cwd,
    env: { PATH: `${bin}:/usr/bin:/bin`, ...env },
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

describe('the local stack, found with no flags', () => {
  it('setup links a launcher that runs this checkout’s CLI with the Node it found', async () => {
    const launcher = await readFile(join(bin, 'toolmesh'), 'utf8');
    expect(launcher).toContain(join(REPO_ROOT, 'packages/cli/src/main.ts'));
    expect(launcher).toMatch(/^exec '\/.*node' /m);
    // Again: the same launcher, nothing else in the folder.
    await exec('bash', [join(REPO_ROOT, 'scripts/install-cli.sh'), bin]);
    expect(await readFile(join(bin, 'toolmesh'), 'utf8')).toBe(launcher);
    const help = await toolmesh(['--help'], tmp);
    expect(help.code).toBe(0);
    expect(help.stdout).toContain('Usage: toolmesh');
  });

  it('calls a tool from a folder of the checkout, and says which stack it uses', async () => {
    const r = await toolmesh(
      ['call', 'builtin.echo', '--args', '{"hi":1}'],
      join(checkout, 'some', 'folder'),
    );
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ hi: 1 });
    const said = r.stderr.split('\n').filter((l) => l.includes('using the local stack'));
    expect(said).toEqual([
      `toolmesh: using the local stack in ${data} (api ${apiUrl}, NATS ${String(stackJson['natsUrl'])}, project ${project})`,
    ]);
    // The call went in as the stack's bus credential: its execution records it.
    const id = /card ([0-9a-f-]+)/.exec(r.stderr)?.[1];
    expect(id).toBeDefined();
  });

  it('uses a second stack’s folder (.data/stacks/api-<port>) when the first one stopped', async () => {
    const other = join(tmp, 'checkout2');
    const beside = join(other, '.data', 'stacks', 'api-9999');
    await mkdir(beside, { recursive: true });
    await writeFile(join(other, '.data', 'stack.json'), JSON.stringify(stackJson));
    // A stack.pid naming no live process: that stack stopped.
    await writeFile(join(other, '.data', 'stack.pid'), '2147483646\n');
    await writeFile(join(beside, 'stack.json'), JSON.stringify(stackJson));
    await writeFile(join(beside, 'stack.pid'), `${process.pid}\n`);
    const r = await toolmesh(['tools', 'list', '--limit', '1'], other);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`using the local stack in ${beside} `);
  });

  it('flags and variables win: another api is asked without the stack’s key', async () => {
    const r = await toolmesh(['tools', 'list', '-p', project], checkout, {
      TOOLMESH_API_URL: 'http://127.0.0.1:1',
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('cannot reach the api at http://127.0.0.1:1');
    // Nothing of the stack is used (its key goes to its own api only), nothing said.
    expect(r.stderr).not.toContain('using the local stack');
    // Nor its project: another api's project is for the user to name.
    const none = await toolmesh(['tools', 'list'], checkout, {
      TOOLMESH_API_URL: 'http://127.0.0.1:1',
    });
    expect(none.code).toBe(2);
    expect(none.stderr).toContain('no project');
  });

  it('the SDK’s connectMesh() finds the stack and calls a tool', async () => {
    const lines: string[] = [];
    const m = await connectMesh({ cwd: checkout, env: {}, log: (l) => lines.push(l) });
    try {
      expect(m.project).toBe(project);
      const result = await m.client.callTool({
        project: m.project,
        channel: 'main',
        tool: 'builtin.echo',
        arguments: { hello: 'world' },
      });
      expect(result.status).toBe('succeeded');
      expect(result.content.result).toEqual({ hello: 'world' });
      expect(lines).toEqual([expect.stringContaining(`using the local stack in ${data}`)]);
    } finally {
      await m.close();
    }
  });

  it('`toolmesh mcp serve` with no flags serves the stack’s project', async () => {
    const transport = new StdioClientTransport({
      command: join(bin, 'toolmesh'),
      args: ['mcp', 'serve'],
      cwd: checkout,
      env: { PATH: `${bin}:/usr/bin:/bin` },
      stderr: 'pipe',
    });
    const client = new Client({ name: 'local-stack-test', version: '1.0.0' });
    await client.connect(transport);
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toContain('builtin__echo');
    } finally {
      await client.close();
    }
  });

  it('pnpm stack’s local project is made once: a second start keeps its key and credential', async () => {
    const again = await ensureLocalProject({ apiUrl, adminKey: ADMIN_KEY, dir: data, project });
    expect(again.apiKey).toBe(stackJson['apiKey']);
    expect(again.busCreds).toBe(stackJson['busCreds']);
  });
});

describe('projects, keys, profiles and bus credentials', () => {
  it('projects list and create use the stack’s admin key', async () => {
    const id = `made-${Date.now().toString(36)}`;
    const made = await toolmesh(['projects', 'create', id, '--name', 'Made'], checkout);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stdout.trim()).toMatch(/^tmk_/);
    const list = await toolmesh(['projects', 'list', '--json'], checkout);
    expect(list.code, list.stderr).toBe(0);
    const ids = (JSON.parse(list.stdout) as { projects: { id: string }[] }).projects.map(
      (p) => p.id,
    );
    expect(ids).toEqual(expect.arrayContaining([id, project]));
    // A project key given outright is no admin key: it sees its own project only.
    const own = await toolmesh(['projects', 'list', '--json'], checkout, {
      TOOLMESH_API_KEY: made.stdout.trim(),
    });
    expect(JSON.parse(own.stdout)).toEqual({ projects: [expect.objectContaining({ id })] });
    const refused = await toolmesh(['projects', 'create', 'nope-x'], checkout, {
      TOOLMESH_API_KEY: made.stdout.trim(),
    });
    expect(refused.code).toBe(3);
  });

  it('keys create, list and revoke; a revoked key stops working', async () => {
    const made = await toolmesh(['keys', 'create', 'ci', '--role', 'caller', '--json'], checkout);
    expect(made.code, made.stderr).toBe(0);
    const key = JSON.parse(made.stdout) as { key: string; key_id: string; role: string };
    expect(key.role).toBe('caller');
    const list = await toolmesh(['keys', 'list'], checkout);
    expect(list.stdout).toContain(key.key_id);
    expect(list.stdout).not.toContain(key.key);
    const revoked = await toolmesh(['keys', 'revoke', key.key_id], checkout);
    expect(revoked.code, revoked.stderr).toBe(0);
    const after = await toolmesh(['tools', 'list'], checkout, { TOOLMESH_API_KEY: key.key });
    expect(after.code).toBe(3);
  });

  it('profiles create, list, update, show and delete', async () => {
    const made = await toolmesh(
      ['profiles', 'create', 'painter', '--tool', 'skills.*', '--internal', 'submit_result'],
      checkout,
    );
    expect(made.code, made.stderr).toBe(0);
    const list = await toolmesh(['profiles', 'list'], checkout);
    expect(list.stdout).toMatch(/painter\s+-\s+skills\.\*\s+submit_result/);
    const upd = await toolmesh(['profiles', 'update', 'painter', '--prompt', 'draw'], checkout);
    expect(upd.code, upd.stderr).toBe(0);
    const shown = await toolmesh(['profiles', 'show', 'painter', '--json'], checkout);
    expect(JSON.parse(shown.stdout)).toMatchObject({
      name: 'painter',
      system_prompt: 'draw',
      allowed_tools: ['skills.*'],
    });
    const none = await toolmesh(['profiles', 'update', 'painter'], checkout);
    expect(none.code).toBe(2);
    expect((await toolmesh(['profiles', 'delete', 'painter'], checkout)).code).toBe(0);
    expect((await toolmesh(['profiles', 'show', 'painter'], checkout)).code).toBe(4);
  });

  it('another project’s key reads, makes and revokes nothing of this project', async () => {
    const other = await mesh.api.createProject();
    const as = { TOOLMESH_API_KEY: other.key };
    for (const args of [
      ['keys', 'list'],
      ['keys', 'create', 'steal'],
      ['profiles', 'list'],
      ['profiles', 'create', 'x'],
      ['bus-credentials', 'create', 'steal'],
      ['bus-credentials', 'list'],
    ]) {
      // A key of another project is told this one does not exist (nothing is said of it).
      const r = await toolmesh(args, checkout, as);
      expect(r.code, `${args.join(' ')}: ${r.stderr}`).toBe(4);
      expect(r.stderr).toContain(`project "${project}" not found`);
    }
    const keys = await toolmesh(['keys', 'list', '--json'], checkout);
    const names = (JSON.parse(keys.stdout) as { keys: { name: string }[] }).keys.map((k) => k.name);
    expect(names).not.toContain('steal');
  });

  it('bus-credentials create writes a .creds file a call connects with', async () => {
    const file = join(tmp, 'mine.creds');
    const made = await toolmesh(['bus-credentials', 'create', 'mine', '-o', file], checkout);
    expect(made.code, made.stderr).toBe(0);
    expect(made.stderr).toContain(`TOOLMESH_BUS_CREDS=${file}`);
    const r = await toolmesh(['call', 'builtin.echo', '--args', '{"via":"creds"}'], checkout, {
      TOOLMESH_BUS_CREDS: file,
    });
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ via: 'creds' });
  });
});

describe('errors that name the fix', () => {
  let plain: LocalNats | undefined;
  afterAll(async () => {
    await plain?.close();
  });

  it('a NATS server that wants a credential: says so and how to give one', async () => {
    const r = await toolmesh(['call', 'builtin.echo', '-p', project], tmp, {
      NATS_URL: String(stackJson['natsUrl']),
    });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `the NATS server at ${String(stackJson['natsUrl'])} wants a credential (Authorization Violation)`,
    );
    expect(r.stderr).toContain('TOOLMESH_BUS_CREDS');
    expect(r.stderr).toContain('leave NATS_URL unset');
  });

  it('a server without toolmesh’s streams (another nats-server): says what it is', async () => {
    plain = await startLocalNats();
    const r = await toolmesh(['call', 'builtin.echo', '-p', project], tmp, { NATS_URL: plain.url });
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('no stream captures');
    expect(r.stderr).toContain(`the NATS server at ${plain.url.replace('nats://', '')}`);
    expect(r.stderr).toContain('another nats-server on this machine?');
  });
});
