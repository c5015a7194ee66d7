// What a new user does, on this machine: clone the repository, run the README's set-up, then its
// stack command. The stack comes up (NATS, Postgres, the five processes, a scripted model since
// no LLM key is set), the demo runs an agent task that draws a picture in the sandbox, prints
// the final card and the picture's path, and that file exists and is a PNG.
import { execFile, spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { freePort } from '@toolmesh/testing';
import { linesWithRepeatedKeys } from './support/log-lines.ts';
import { REPO_ROOT } from './support/mesh.ts';

const exec = promisify(execFile);
let dir = '';

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-clone-'));
  // The committed tree only, as a user's clone has it.
  await exec('git', ['clone', '--quiet', REPO_ROOT, join(dir, 'toolmesh')]);
}, 60_000);
afterAll(async () => {
  if (dir) {
    // As root in a 0700 folder, the stack keeps its sandboxes under /var/lib/toolmesh (the
    // sandbox uid cannot enter the clone): one folder per checkout, named by its path's hash.
    const id = createHash('sha256').update(join(dir, 'toolmesh')).digest('hex').slice(0, 12);
    await rm(join('/var/lib/toolmesh', `sandboxes-${id}`), { recursive: true, force: true });
    await rm(dir, { recursive: true, force: true });
  }
});

/** Runs a command in the clone; resolves with its exit code and output. */
async function run(cmd: string, args: string[], env: Record<string, string> = {}) {
  const child = spawn(cmd, args, {
    cwd: join(dir, 'toolmesh'),
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (out += b.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, out };
}

it('the README set-up and stack commands bring the stack up and the demo draws a picture', async () => {
  const readme = await readFile(join(dir, 'toolmesh', 'README.md'), 'utf8');
  const commands = [...readme.matchAll(/```sh\n([^\n]+)\n```/g)].map((m) => m[1]);
  expect(commands.slice(0, 2)).toEqual(['bash scripts/setup.sh', 'pnpm stack']);

  // Its toolmesh launcher goes into a folder of the test's: the machine's own stays as it is.
  const bin = join(dir, 'bin');
  const setup = await run('bash', ['scripts/setup.sh'], { TOOLMESH_BIN_DIR: bin });
  expect(setup.code, setup.out).toBe(0);
  expect(await readFile(join(bin, 'toolmesh'), 'utf8')).toContain(
    join(dir, 'toolmesh', 'packages/cli/src/main.ts'),
  );

  // The stack's embedded defaults, as a user runs it: its own nats-server with the deployment's
  // JWT users and its own Postgres under the clone's .data; an api port nothing else holds.
  const stack = await run('pnpm', ['stack', '--once'], {
    NATS_URL: '',
    DATABASE_URL: '',
    CG__API__PORT: String(await freePort()),
    CG__REAPER__HEALTH_PORT: '0',
    CG__TOOLS__HEALTH_PORT: '0',
    CG__LLM__API_KEY: '',
  });
  expect(stack.code, stack.out.slice(-6_000)).toBe(0);
  expect(stack.out).toContain('no LLM key set');
  // No service asked its nats-server for what its user may not have.
  expect(stack.out).not.toMatch(/Violation/);
  // Where the console is, and a key to sign in with; no log line names a key twice.
  expect(stack.out).toMatch(
    /^\[stack\] console on http:\/\/127\.0\.0\.1:\d+\/console: sign in with the key tmk_\S+ \(project local\)$/m,
  );
  expect(linesWithRepeatedKeys(stack.out)).toEqual([]);
  expect(stack.out).toMatch(/\[demo\] task succeeded; final card:/);
  expect(stack.out).toContain('"kind": "final"');
  const path = /\[demo\] artifact path: (.+)$/m.exec(stack.out)?.[1];
  expect(path, stack.out.slice(-3_000)).toBeDefined();
  expect(path!.startsWith(join(dir, 'toolmesh', '.data'))).toBe(true);
  const png = await readFile(path!);
  expect(png.subarray(1, 4).toString()).toBe('PNG');
}, 300_000);
