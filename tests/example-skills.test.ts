// The example skills are valid skill packages, and they do what their SKILL.md says, run with
// the system's python3 (Debian's python3-pil provides Pillow).
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { inspectSkillZip } from '@toolmesh/skills';
import { REPO_ROOT } from './support/mesh.ts';
import { zipFolder } from '@toolmesh/cli';

const EXAMPLES = join(REPO_ROOT, 'examples/skills');
const PYTHON = '/usr/bin/python3';
let work: string;
beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'toolmesh-examples-'));
});
afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

function run(args: string[], cwd: string) {
  const child = spawn(PYTHON, args, { cwd, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (b: Buffer) => (out += b.toString()));
  child.stderr.on('data', (b: Buffer) => (err += b.toString()));
  return { child, out: () => out, err: () => err };
}

it.each(['draw-image', 'http-hello'])('%s is a valid skill package', async (name) => {
  const pkg = await inspectSkillZip(await zipFolder(join(EXAMPLES, name)));
  expect(pkg.name).toBe(name);
  expect(pkg.description.length).toBeGreaterThan(10);
  expect(pkg.files.map((f) => f.path)).toContain('SKILL.md');
});

it('draw-image writes a valid PNG of the asked size', async () => {
  const p = run(
    [
      join(EXAMPLES, 'draw-image/draw.py'),
      '--out',
      'out/pic.png',
      '--caption',
      'hi',
      '--width',
      '64',
      '--height',
      '48',
    ],
    work,
  );
  const [code] = (await once(p.child, 'exit')) as [number];
  expect(code, p.err()).toBe(0);
  const summary = JSON.parse(p.out()) as {
    path: string;
    width: number;
    height: number;
    bytes: number;
  };
  expect(summary).toMatchObject({ path: 'out/pic.png', width: 64, height: 48 });
  const png = await readFile(join(work, 'out/pic.png'));
  expect(png.subarray(0, 8)).toEqual(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]));
  expect(png.readUInt32BE(16)).toBe(64); // IHDR width
  expect(png.readUInt32BE(20)).toBe(48); // IHDR height
  expect(png.length).toBe(summary.bytes);
});

it('http-hello answers GETs until it is stopped', async () => {
  const port = await new Promise<number>((resolve) => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const a = s.address();
      s.close(() => resolve(typeof a === 'object' && a ? a.port : 0));
    });
  });
  const p = run(
    [join(EXAMPLES, 'http-hello/server.py'), '--port', String(port), '--greeting', 'hey'],
    work,
  );
  try {
    let body: unknown;
    for (let i = 0; i < 50 && body === undefined; i++) {
      body = await fetch(`http://127.0.0.1:${port}/x`).then(
        (r) => r.json(),
        () => undefined,
      );
      if (body === undefined) await new Promise((r) => setTimeout(r, 100));
    }
    expect(body).toEqual({ greeting: 'hey', path: '/x', count: 1 });
    expect(await fetch(`http://127.0.0.1:${port}/healthz`).then((r) => r.json())).toEqual({
      ok: true,
    });
  } finally {
    p.child.kill('SIGTERM');
    await once(p.child, 'exit');
  }
});
