// The `toolmesh` CLI as a user runs it: a child process against a running api (listening on a
// port) and skills service, configured through its environment. Each command is checked by its
// output and by the exit code a script would branch on.
import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import { once } from 'node:events';
import { join } from 'node:path';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { startToolsService, type ToolsService } from '../services/tools/src/app.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { issueBusCreds } from './support/cli.ts';
import { until } from './support/procs.ts';
import { newSecretsKey } from './support/tools-mesh.ts';
import { startUpstream, type Upstream } from './support/upstream.ts';

const MAIN = join(import.meta.dirname, '..', 'packages/cli/src/main.ts');
const EXAMPLE_SKILL = join(import.meta.dirname, '..', 'examples/skills/http-hello');

let mesh: AgentMesh;
let env: Record<string, string>;
let tools: ToolsService;
let up: Upstream;
let tmp: string;

beforeAll(async () => {
  mesh = await startAgentMesh({
    CG__SECRETS__KEY: newSecretsKey(),
    CG__TOOLS__ALLOWED_PRIVATE_HOSTS: '["127.0.0.1"]',
    CG__TOOLS__HEALTH_PORT: '0',
  });
  await mesh.startSkills();
  await mesh.startWorker();
  tools = await startToolsService(
    loadConfig({ env: mesh.api.serviceEnv('tools') }),
    pino({ level: 'silent' }),
  );
  up = await startUpstream();
  tmp = await mkdtemp(join(tmpdir(), 'toolmesh-cli-'));
  const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
  env = {
    PATH: process.env['PATH'] ?? '',
    TOOLMESH_API_URL: address,
    TOOLMESH_API_KEY: mesh.project.key,
    TOOLMESH_PROJECT: mesh.project.id,
    TOOLMESH_SUBJECT_ROOT: mesh.api.config.nats.subject_root,
    NATS_URL: mesh.api.env['CG__NATS__URL']!,
    TOOLMESH_BUS_CREDS: await issueBusCreds(mesh.api, mesh.project, tmp),
  };
});
afterAll(async () => {
  await tools?.stop();
  await mesh?.close();
  await up?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

/** Runs the CLI to its end. `onStderr` sees stderr as it arrives (watch's ready line). */
function toolmesh(
  args: string[],
  extraEnv: Record<string, string> = {},
  onStderr?: (text: string) => void,
): Promise<Run> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => (stdout += b.toString()));
  child.stderr.on('data', (b: Buffer) => {
    stderr += b.toString();
    onStderr?.(stderr);
  });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout, stderr }));
  });
}

const json = (r: Run): any => JSON.parse(r.stdout);

describe('toolmesh call', () => {
  it('prints the result of a call and exits 0', async () => {
    const r = await toolmesh(['call', 'builtin.echo', '--args', '{"text":"hello"}', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r)).toMatchObject({
      tool_name: 'builtin.echo',
      status: 'succeeded',
      content: { status: 'succeeded', result: { text: 'hello' } },
    });
    const text = await toolmesh(['call', 'builtin.echo', '-a', '{"n":7}']);
    expect(text.code).toBe(0);
    expect(JSON.parse(text.stdout)).toEqual({ n: 7 });
    expect(text.stderr).toMatch(/builtin\.echo succeeded in \d+ ms/);
  });

  it('exits 1 when the call fails, with the error on stderr', async () => {
    const r = await toolmesh(['call', 'builtin.sleep', '--args', '{"ms":"soon"}']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/builtin\.sleep failed: invalid_arguments/);
    const j = await toolmesh(['call', 'builtin.sleep', '--args', '{"ms":"soon"}', '--json']);
    expect(j.code).toBe(1);
    expect(json(j)).toMatchObject({
      status: 'failed',
      content: { error: { code: 'invalid_arguments' } },
    });
  });

  it('exits 5 when the call runs past its deadline', async () => {
    const r = await toolmesh([
      'call',
      'builtin.sleep',
      '--args',
      '{"ms":60000}',
      '--timeout-ms',
      '300',
    ]);
    expect(r.code).toBe(5);
    expect(r.stderr).toMatch(/builtin\.sleep timeout/);
  });

  it('with --no-wait prints the tool call id, whose execution can then be shown', async () => {
    const r = await toolmesh(['call', 'builtin.echo', '--args', '{"x":1}', '--no-wait']);
    expect(r.code, r.stderr).toBe(0);
    const id = r.stdout.trim();
    expect(id).toMatch(/^[0-9a-f-]{36}$/);
    const shown: unknown = await until(async () => {
      const s = await toolmesh(['executions', 'show', id, '--json']);
      const body: unknown = s.code === 0 ? json(s) : undefined;
      return (body as any)?.execution.status === 'succeeded' ? body : undefined;
    });
    expect(shown).toMatchObject({
      execution: { id, tool: 'builtin.echo', status: 'succeeded' },
      card: { content: { status: 'succeeded', result: { x: 1 } } },
    });
  });

  it('exits 130 on Ctrl-C while waiting, and the call goes on', async () => {
    const id = randomUUID();
    const child = spawn(
      process.execPath,
      [MAIN, 'call', 'builtin.sleep', '--args', '{"ms":6000}', '--id', id],
      { env, stdio: 'ignore' },
    );
    await until(async () => {
      const s = await toolmesh(['executions', 'show', id, '--json']);
      return s.code === 0 ? true : undefined;
    });
    child.kill('SIGINT');
    const [code] = (await once(child, 'exit')) as [number | null];
    expect(code).toBe(130);
    await until(async () => {
      const s = await toolmesh(['executions', 'show', id, '--json']);
      return json(s).execution.status === 'succeeded' ? true : undefined;
    });
  });

  it('exits 2 on usage errors: bad JSON, a bad tool name, no project, an unknown command', async () => {
    const badJson = await toolmesh(['call', 'builtin.echo', '--args', '{nope']);
    expect(badJson.code).toBe(2);
    expect(badJson.stderr).toMatch(/--args is not valid JSON/);
    expect((await toolmesh(['call', 'echo'])).code).toBe(2);
    expect((await toolmesh(['call', 'builtin.echo'], { TOOLMESH_PROJECT: '' })).code).toBe(2);
    expect((await toolmesh(['frobnicate'])).code).toBe(2);
  });

  it('exits 3 when NATS cannot be reached', async () => {
    const r = await toolmesh(['call', 'builtin.echo', '--nats-url', 'nats://127.0.0.1:1']);
    expect(r.code).toBe(3);
    expect(r.stderr).toMatch(/cannot connect to NATS/);
  });
});

describe('toolmesh watch', () => {
  it("prints the project's events as they happen, one JSON line each", async () => {
    let ready!: () => void;
    const watching = new Promise<void>((resolve) => (ready = resolve));
    const run = toolmesh(['watch', '--count', '1', '--timeout-ms', '20000', '--json'], {}, (e) => {
      if (e.includes('watching ')) ready();
    });
    await watching;
    const result = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'elsewhere',
      tool: 'builtin.echo',
      arguments: { watched: true },
    });
    const r = await run;
    expect(r.code, r.stderr).toBe(0);
    const event = JSON.parse(r.stdout.trim());
    expect(event).toMatchObject({
      kind: 'evt',
      component: 'tool',
      target: 'builtin',
      channel: 'elsewhere',
      data: { tool_call_id: result.tool_call_id, status: 'succeeded' },
    });
  });

  it('exits 5 when the events asked for do not come in time', async () => {
    const r = await toolmesh(['watch', '--count', '1', '--timeout-ms', '200']);
    expect(r.code).toBe(5);
  });
});

describe('management commands', () => {
  it('uploads a skill folder, and lists the tools', async () => {
    const r = await toolmesh(['skills', 'upload', EXAMPLE_SKILL, '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r)).toMatchObject({ skill: { name: 'http-hello' }, created: true });
    expect(json(r).version.version).toMatch(/^[0-9a-f]{64}$/);
    const again = await toolmesh(['skills', 'upload', EXAMPLE_SKILL]);
    expect(again.stdout).toMatch(/^http-hello [0-9a-f]{64} \(already uploaded\)/);
    expect((await toolmesh(['skills', 'upload', '/no/such/skill'])).code).toBe(4);

    const tools = await toolmesh(['tools', 'list', '--json']);
    expect(tools.code).toBe(0);
    const names = json(tools).tools.map((t: { name: string }) => t.name);
    expect(names).toEqual(expect.arrayContaining(['builtin.echo', 'skills.run_cmd']));
    const table = await toolmesh(['tools', 'list', '--query', 'echo']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+CATEGORY\s+ORIGIN\s+DESCRIPTION/);
    expect(table.stdout).toContain('builtin.echo');
  });

  it('lists, shows and cancels executions', async () => {
    const sent = await toolmesh(['call', 'builtin.sleep', '--args', '{"ms":60000}', '--no-wait']);
    const id = sent.stdout.trim();
    await until(async () => {
      const s = await toolmesh(['executions', 'show', id, '--json']);
      return s.code === 0 && json(s).execution.status === 'running' ? true : undefined;
    });
    const cancel = await toolmesh(['executions', 'cancel', id, '--reason', 'test']);
    expect(cancel.code, cancel.stderr).toBe(0);
    await until(async () => {
      const s = await toolmesh(['executions', 'show', id, '--json']);
      return json(s).execution.status === 'canceled' ? true : undefined;
    });
    // Cancelling it again is refused: it already finished.
    const again = await toolmesh(['executions', 'cancel', id]);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already finished: canceled/);

    const list = await toolmesh(['executions', 'list', '--tool', 'builtin.sleep', '--json']);
    expect(list.code).toBe(0);
    expect(json(list).executions.map((e: { id: string }) => e.id)).toContain(id);
    const missing = await toolmesh(['executions', 'show', 'no-such-call']);
    expect(missing.code).toBe(4);
  });

  it('starts a task for an agent and shows it', async () => {
    await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/agents`, {
      key: mesh.project.key,
      body: { id: 'helper' },
    });
    const started = await toolmesh(['task', 'start', 'helper', '--input', 'draw a cat', '--json']);
    expect(started.code, started.stderr).toBe(0);
    const { task_id } = json(started);
    const shown = await toolmesh(['task', 'show', task_id, '--json']);
    expect(shown.code).toBe(0);
    expect(json(shown)).toMatchObject({ task_id, agent_id: 'helper', input: 'draw a cat' });
    expect((await toolmesh(['task', 'start', 'nobody', '-i', 'hi'])).code).toBe(4);
    expect((await toolmesh(['task', 'show', randomUUID()])).code).toBe(4);
  });

  it('with --wait follows a task to its end: exit 0 with the final card, 1 failed, 5 past the wait', async () => {
    await mesh.createAgent({
      id: 'finisher',
      script: [{ toolCalls: [{ name: 'submit_result', arguments: { result: { done: 42 } } }] }],
    });
    const ok = await toolmesh(['task', 'start', 'finisher', '-i', 'finish', '--wait', '--json']);
    expect(ok.code, ok.stderr).toBe(0);
    expect(json(ok)).toMatchObject({
      status: 'succeeded',
      final_card: { content: expect.objectContaining({ result: { done: 42 } }) },
    });

    await mesh.createAgent({ id: 'broken', script: [{ error: { status: 400, message: 'no' } }] });
    const failed = await toolmesh(['task', 'start', 'broken', '-i', 'fail', '--wait']);
    expect(failed.code, failed.stderr).toBe(1);
    expect(failed.stdout).toContain('failed');

    await mesh.createAgent({ id: 'slow', script: [{ text: 'late', delayMs: 5_000 }] });
    const slow = await toolmesh([
      'task',
      'start',
      'slow',
      '-i',
      'x',
      '--wait',
      '--timeout-ms',
      '500',
    ]);
    expect(slow.code, slow.stderr).toBe(5);
    expect(slow.stderr).toMatch(/still (pending|running)/);
  });

  it("lists the project's sandboxes", async () => {
    const sandboxId = `sbx-${randomUUID()}`;
    await mesh.api.store.sandboxes.claim({
      sandboxId,
      provider: 'local',
      projectId: mesh.project.id,
      agentId: 'helper',
      sessionKey: 'cli-session',
      owner: 'call-1',
      lockMs: 60_000,
      idleTtlSec: 600,
      hardTtlSec: 3_600,
    });
    const r = await toolmesh(['sandboxes', 'list', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(json(r).sandboxes).toEqual([
      expect.objectContaining({
        sandbox_id: sandboxId,
        state: 'active',
        session_key: 'cli-session',
      }),
    ]);
    const table = await toolmesh(['sandboxes', 'list']);
    expect(table.stdout).toContain(sandboxId);
  });

  it('exits 3 when the api refuses the key or cannot be reached', async () => {
    const refused = await toolmesh(['tools', 'list', '--api-key', 'tmk_wrong']);
    expect(refused.code).toBe(3);
    const json3 = await toolmesh(['tools', 'list', '--json', '--api-url', 'http://127.0.0.1:1']);
    expect(json3.code).toBe(3);
    expect(json(json3)).toMatchObject({ error: { code: 'unreachable' } });
  });

  it('documents the exit codes in --help', async () => {
    const r = await toolmesh(['--help']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/Exit codes:[\s\S]*5 {2}timeout/);
  });
});

describe('secrets and HTTP tools', () => {
  const token = `cli-token-${randomUUID()}`;
  const idSchema = JSON.stringify({
    type: 'object',
    properties: { id: { type: 'string' } },
    required: ['id'],
  });

  it('stores, lists and deletes secrets without ever printing a value', async () => {
    const set = await toolmesh(['secrets', 'set', 'api_token', '--from-env', 'MY_TOKEN'], {
      MY_TOKEN: token,
    });
    expect(set.code, set.stderr).toBe(0);
    expect(set.stdout).toContain('secret api_token stored');
    const list = await toolmesh(['secrets', 'list', '--json']);
    expect(list.code).toBe(0);
    expect(json(list).secrets.map((x: { name: string }) => x.name)).toEqual(['api_token']);
    const table = await toolmesh(['secrets', 'list']);
    expect(table.stdout.split('\n')[0]).toMatch(/^NAME\s+CREATED_AT\s+UPDATED_AT/);
    for (const out of [set.stdout, list.stdout, table.stdout]) expect(out).not.toContain(token);
    expect((await toolmesh(['secrets', 'set', 'x'])).code).toBe(2); // no value given
    expect((await toolmesh(['secrets', 'set', 'x', '--from-env', 'UNSET_VAR'])).code).toBe(2);
    await toolmesh(['secrets', 'set', 'temp', '--value', 'v']);
    expect((await toolmesh(['secrets', 'delete', 'temp'])).code).toBe(0);
    expect((await toolmesh(['secrets', 'delete', 'temp'])).code).toBe(4);
  });

  it('registers an HTTP tool from flags and calls it like any other tool', async () => {
    const add = await toolmesh([
      'tools',
      'add-http',
      'web.item',
      '--url',
      `${up.url}/echo/items/{id}`,
      '--parameters',
      idSchema,
      '--header',
      'X-Client: cli',
      '--auth',
      'bearer:api_token',
    ]);
    expect(add.code, add.stderr).toBe(0);
    expect(add.stdout).toContain('tool web.item registered (http)');
    const r = await toolmesh(['call', 'web.item', '--args', '{"id":"42"}', '--json']);
    expect(r.code, r.stderr).toBe(0);
    const result = json(r).content.result;
    expect(result.path).toBe('/echo/items/42');
    expect(result.headers['x-client']).toBe('cli');
    expect(result.headers['authorization']).toBe('Bearer [redacted]');
    expect(up.seen.at(-1)!.headers['authorization']).toBe(`Bearer ${token}`);
    const bad = await toolmesh(['call', 'web.item', '--args', '{}']);
    expect(bad.code).toBe(1);
    expect(bad.stderr).toMatch(/invalid_arguments/);
    expect(
      (await toolmesh(['tools', 'add-http', 'web.x', '--auth', 'nope:x', '--url', up.url])).code,
    ).toBe(2);
    expect((await toolmesh(['tools', 'add-http', 'web.item', '--url', up.url])).code).toBe(1); // exists
  });

  it('registers an HTTP tool from a JSON file', async () => {
    const file = join(tmp, 'tool.json');
    await writeFile(
      file,
      JSON.stringify({
        name: 'web.create',
        description: 'create an item',
        parameters: JSON.parse(idSchema) as unknown,
        http: { method: 'POST', url: `${up.url}/echo/create` },
        options: { retries: { max: 1 } },
      }),
    );
    const add = await toolmesh(['tools', 'add-http', '--file', file, '--json']);
    expect(add.code, add.stderr).toBe(0);
    expect(json(add)).toMatchObject({ name: 'web.create', origin: 'http' });
    const r = await toolmesh(['call', 'web.create', '--args', '{"id":"7"}', '--json']);
    expect(r.code, r.stderr).toBe(0);
    expect(JSON.parse(json(r).content.result.body as string)).toEqual({ id: '7' });
    expect((await toolmesh(['tools', 'add-http', '--file', join(tmp, 'none.json')])).code).toBe(4);
  });

  it('registers an HTTP tool whose OAuth 2.0 config comes from a file', async () => {
    const oauth = {
      type: 'oauth2',
      grant: 'client_credentials',
      token_url_secret: 'oauth_token_url',
      client_id_secret: 'oauth_client_id',
      client_secret_secret: 'oauth_client_secret',
      scope: 'items:read',
    };
    const file = join(tmp, 'oauth.json');
    await writeFile(file, JSON.stringify(oauth));
    const add = await toolmesh([
      'tools',
      'add-http',
      'web.oauthed',
      '--url',
      `${up.url}/echo/oauthed`,
      '--auth',
      `@${file}`,
      '--json',
    ]);
    expect(add.code, add.stderr).toBe(0);
    expect(json(add)).toMatchObject({ name: 'web.oauthed', http: { auth: oauth } });
    const broken = join(tmp, 'broken.json');
    await writeFile(broken, '{"type": "oauth2"');
    const bad = await toolmesh([
      'tools',
      'add-http',
      'web.o2',
      '--url',
      up.url,
      '--auth',
      `@${broken}`,
    ]);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('is not valid JSON');
  });

  it('a call to an unregistered tool fails at once instead of hanging', async () => {
    const r = await toolmesh(['call', 'nothing.here', '--json']);
    expect(r.code).toBe(1);
    expect(json(r)).toMatchObject({ content: { error: { code: 'unknown_tool' } } });
  });
});
