// builtin.execute_python: a short program in a fresh sandbox of the call's own, with no network,
// a time limit and a memory limit. Output comes back as skills.run_cmd's does; going past a limit
// fails with that limit's code; the sandbox is gone once the call ends.
import { readdir } from 'node:fs/promises';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

let mesh: SkillsMesh;
let server: Server;
let hits = 0;

beforeAll(async () => {
  mesh = await startSkillsMesh({ CG__BUILTIN__PYTHON_MEMORY_BYTES: String(256 * 1024 * 1024) });
  await mesh.startSkills();
  server = createServer((_req, res) => {
    hits++;
    res.end('reached');
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
}, 60_000);
afterAll(async () => {
  server?.close();
  await mesh?.close();
});

const run = (args: Record<string, unknown>) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: 'builtin.execute_python',
    arguments: args,
  });
type Out = { exit_code: number; stdout: string; stderr: string };

it('runs a program and returns what it printed, reading stdin', { timeout: 60_000 }, async () => {
  const r = await run({
    code: 'import sys\nprint(sum(range(10)))\nprint(sys.stdin.read().upper())',
    stdin: 'hi',
  });
  expect(r.status, JSON.stringify(r.content.error)).toBe('succeeded');
  expect(r.content.result).toMatchObject({ exit_code: 0, stdout: '45\nHI\n' });
});

it('an exception is the program failing, not the call', { timeout: 60_000 }, async () => {
  const r = await run({ code: 'raise ValueError("bad input")' });
  expect(r.status).toBe('succeeded');
  const out = r.content.result as Out;
  expect(out.exit_code).toBe(1);
  expect(out.stderr).toContain('ValueError: bad input');
});

it('a program past its time limit fails `timeout`', { timeout: 60_000 }, async () => {
  const r = await run({ code: 'while True:\n    pass', timeout_ms: 500 });
  expect(r.status).toBe('timeout');
  expect(r.content.error).toMatchObject({ code: 'timeout', details: { timeout_ms: 500 } });
  const over = await run({ code: 'pass', timeout_ms: 60_000 });
  expect(over.content.error).toMatchObject({ code: 'invalid_arguments' });
});

it('a program past its memory limit fails `oom`', { timeout: 60_000 }, async () => {
  const r = await run({ code: 'x = bytearray(512 * 1024 * 1024)\nprint(len(x))' });
  expect(r.status).toBe('failed');
  expect(r.content.error).toMatchObject({ code: 'oom', details: { limit: 'memory' } });
});

it('has no network and cannot read the host', { timeout: 60_000 }, async () => {
  const { port } = server.address() as AddressInfo;
  const r = await run({
    code: [
      'import urllib.request',
      'try:',
      `    print(urllib.request.urlopen("http://127.0.0.1:${port}/", timeout=2).read())`,
      'except Exception as e:',
      '    print("refused", type(e).__name__)',
      'try:',
      '    open("/etc/shadow").read()',
      '    print("read shadow")',
      'except Exception as e:',
      '    print("no shadow", type(e).__name__)',
    ].join('\n'),
  });
  expect(r.status).toBe('succeeded');
  const out = r.content.result as Out;
  expect(out.stdout).toMatch(/^refused /m);
  expect(out.stdout).toMatch(/^no shadow /m);
  expect(hits).toBe(0);
});

it('leaves no sandbox behind', { timeout: 60_000 }, async () => {
  const r = await run({ code: 'open("left.txt", "w").write("x")' });
  expect(r.status).toBe('succeeded');
  const { rows } = await mesh.api.store.pool.query<{ state: string }>(
    `SELECT state FROM state.sandboxes WHERE project_id = $1 AND session_key = $2`,
    [mesh.project.id, `call:${r.tool_call_id}`],
  );
  expect(rows.filter((row) => row.state === 'active')).toEqual([]);
  // Its workdir went with it: no file the program wrote is left under the sandbox root.
  const root = mesh.api.env['CG__SANDBOX__ROOT_DIR']!;
  const left = (await readdir(root, { recursive: true })).filter((f) => f.endsWith('left.txt'));
  expect(left).toEqual([]);
});
