// Every fenced block of README.md and docs/*.md, as written, against one running stack: what a
// new user does. The test clones the committed tree, runs the README's set-up and `pnpm stack`
// (its embedded defaults; the demo must draw its picture), then runs each page's blocks in order
// in the clone, as a user would type them: `toolmesh` is the clone's own (node_modules/.bin, as
// on the PATH after set-up), and no TOOLMESH_*, NATS_URL or DATABASE_URL is set. The one change
// made to a block: the stack runs on a free port, which replaces the api's default 8080. A page
// whose first block is a `pnpm stack` command with flags (`pnpm stack --allow-loopback`) has the
// running stack stopped, as with Ctrl-C, and that command started in its place before its other
// blocks; the pages after it run against that stack.
//
// What each tag gets:
//   sh, bash          run: one bash per page, its blocks in order (`set -euo pipefail`), so a
//                     variable set in one block is there in the next; each must exit 0. What a
//                     page starts in the background is stopped when its bash ends. No Docker
//                     engine runs here: `docker-compose` on the PATH is tests/support/compose-check.ts,
//                     which checks each command with the real docker-compose's `config` (the
//                     page's variables interpolated) and the names it gives against the file
//   ts                run: written into the clone as a module and run with node; must exit 0
//   json              parsed (a fragment `"key": {...}` inside an object); a protocol message
//                     (`"v": 1` with its fields) is checked against its schema
//   toml              loaded as config.toml is, by the configuration's loader (unknown keys fail)
//   python            compiled with python3 (nats-py is not installable here: not run)
//   mermaid           a diagram GitHub renders: it starts with a known diagram type
//   ini               a systemd unit: every line a section, a key=value or a comment
//   text              output, grammar or a message dump: not run
// Any other tag, or none, fails. Blocks listed in NOT_RUN are named with the reason they cannot
// run against a local stack; an entry that no longer matches a block fails too.
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { once } from 'node:events';
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { CancelRequest, ToolCall, ToolResultEvent, Wakeup } from '@toolmesh/protocol';
import { freePort } from '@toolmesh/testing';
import { REPO_ROOT } from './support/mesh.ts';
import { linesWithRepeatedKeys } from './support/log-lines.ts';
import { blocksOf, type Block } from './support/doc-blocks.ts';

const exec = promisify(execFile);

/**
 * Blocks that cannot run against a local stack, each named by its page and first line, with the
 * reason. Everything else runs or is checked.
 */
const NOT_RUN: { file: string; first: string; why: string }[] = [
  {
    file: 'README.md',
    first: 'pnpm verify',
    why: 'the test suite itself; .ci/run runs it (checked below)',
  },
  { file: 'docs/stack.md', first: 'pnpm verify', why: 'the test suite itself; .ci/run runs it' },
];

const RUN_TAGS = new Set(['sh', 'bash']);
/** A block that starts the stack, which the test starts in place of the running one. */
const STACK_COMMAND = /^pnpm stack( --[a-z-]+)*$/;
const CHECK_TAGS = new Set(['json', 'toml', 'python', 'mermaid', 'ini', 'text', 'ts']);

async function pages(root: string): Promise<string[]> {
  const docs = (await readdir(join(root, 'docs'))).filter((n) => n.endsWith('.md')).sort();
  return ['README.md', ...docs.map((n) => `docs/${n}`)];
}

async function allBlocks(root: string): Promise<Block[]> {
  const out: Block[] = [];
  for (const file of await pages(root))
    out.push(...blocksOf(file, await readFile(join(root, file), 'utf8')));
  return out;
}

const notRun = (b: Block) =>
  NOT_RUN.find((n) => n.file === b.file && b.code.split('\n')[0] === n.first);

describe('every block is tagged with what the test does with it', () => {
  it('has a tag the test knows, and every NOT_RUN entry names a block', async () => {
    const blocks = await allBlocks(REPO_ROOT);
    const unknown = blocks.filter((b) => !RUN_TAGS.has(b.tag) && !CHECK_TAGS.has(b.tag));
    expect(unknown.map((b) => `${b.file}:${b.line} \`\`\`${b.tag}`)).toEqual([]);
    for (const n of NOT_RUN) {
      expect(
        blocks.some((b) => b.file === n.file && b.code.split('\n')[0] === n.first),
        `${n.file}: ${n.first}`,
      ).toBe(true);
    }
  });

  it("the README's test command is what CI runs", async () => {
    const ci = await readFile(join(REPO_ROOT, '.ci/run'), 'utf8');
    const last = ci.trim().split('\n').at(-1);
    const readme = blocksOf('README.md', await readFile(join(REPO_ROOT, 'README.md'), 'utf8'));
    expect(readme.some((b) => b.code === last)).toBe(true);
    expect(last).toBe('pnpm verify');
  });
});

/** GitHub's anchor of a heading: lower case, punctuation dropped, spaces to hyphens. */
const anchorOf = (heading: string) =>
  heading
    .trim()
    .toLowerCase()
    .replaceAll(/[^\p{L}\p{N}_\- ]/gu, '')
    .replaceAll(' ', '-');

/** The anchors of a page's headings (not of lines in its code blocks). */
function anchorsOf(text: string): Set<string> {
  const out = new Set<string>();
  let fenced = false;
  for (const line of text.split('\n')) {
    if (/^\s*```/.test(line)) fenced = !fenced;
    const h = /^#+ (.*)$/.exec(line);
    if (h && !fenced) out.add(anchorOf(h[1]!));
  }
  return out;
}

describe('what the pages cite is in the repository', () => {
  it('every relative link names a file of the repository (and a heading of it), and every path in backticks exists', async () => {
    const missing: string[] = [];
    for (const file of await pages(REPO_ROOT)) {
      const text = await readFile(join(REPO_ROOT, file), 'utf8');
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^(https?|mailto):/.test(target!)) continue;
        const [path, anchor] = target!.split('#') as [string, string | undefined];
        const resolved = path === '' ? file : join(dirname(file), path);
        const body = await readFile(join(REPO_ROOT, resolved), 'utf8').catch(() => undefined);
        if (body === undefined) missing.push(`${file}: ${target} (no such file)`);
        else if (anchor && resolved.endsWith('.md') && !anchorsOf(body).has(anchor))
          missing.push(`${file}: ${target} (no such heading)`);
      }
      const paths = text.matchAll(
        /`((?:packages|services|scripts|tests|infra|examples|bench|docs)\/[^`\s*<]+)`/g,
      );
      for (const [, path] of paths) {
        const clean = path!.replace(/[/.,]+$/, '');
        const found = await readFile(join(REPO_ROOT, clean)).then(
          () => true,
          (err: NodeJS.ErrnoException) => err.code === 'EISDIR',
        );
        if (!found) missing.push(`${file}: ${clean}`);
      }
    }
    expect(missing).toEqual([]);
  });
});

describe('blocks checked without a stack', () => {
  it('json blocks parse; protocol messages match their schemas', async () => {
    const schemas = [ToolCall, ToolResultEvent, Wakeup, CancelRequest];
    for (const b of (await allBlocks(REPO_ROOT)).filter((x) => x.tag === 'json')) {
      const where = `${b.file}:${b.line}`;
      const text = b.code.trim().startsWith('"') ? `{${b.code}}` : b.code;
      let value: unknown;
      expect(() => {
        value = JSON.parse(text) as unknown;
      }, where).not.toThrow();
      if (typeof value === 'object' && value !== null && 'v' in value) {
        const ok = schemas.some((s) => s.safeParse(value).success);
        expect(ok, `${where}: a message that no protocol schema accepts`).toBe(true);
      }
    }
  });

  it('toml blocks are valid configuration', async () => {
    for (const b of (await allBlocks(REPO_ROOT)).filter((x) => x.tag === 'toml')) {
      // The loader's own parse and schema: an unknown key or a wrong type throws, naming it.
      expect(() =>
        loadConfig({ source: b.code, path: `${b.file}:${b.line}`, env: {} }),
      ).not.toThrow();
    }
  });

  it('python blocks compile, mermaid blocks name a diagram, ini blocks are units', async () => {
    for (const b of await allBlocks(REPO_ROOT)) {
      const where = `${b.file}:${b.line}`;
      if (b.tag === 'python') {
        const child = spawn('python3', ['-c', 'import ast,sys; ast.parse(sys.stdin.read())']);
        child.stdin.end(b.code);
        const [code] = (await once(child, 'exit')) as [number];
        expect(code, where).toBe(0);
      }
      if (b.tag === 'mermaid')
        expect(b.code, where).toMatch(/^(flowchart \w+|sequenceDiagram|graph \w+)\n/);
      if (b.tag === 'ini') {
        for (const line of b.code.split('\n')) {
          expect(line, where).toMatch(/^(#.*|\[\w+\]|\w+=.*|)$/);
        }
      }
    }
  });
});

describe('blocks run against one stack', () => {
  let dir = '';
  let clone = '';
  let stack: ChildProcess | undefined;
  let stackOut = '';
  let port = 0;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolmesh-docs-'));
    clone = join(dir, 'toolmesh');
    // The committed tree only, as a user's clone has it.
    await exec('git', ['clone', '--quiet', REPO_ROOT, clone]);
  }, 60_000);

  /** Ctrl-C to the running stack, as its user stops it; resolves once it has exited. */
  async function stopStack() {
    if (!stack || stack.exitCode !== null) return;
    // pnpm runs the script in a process group of its own: the signal goes to the stack's pid.
    const pid = Number(
      (await readFile(join(clone, '.data/stack.pid'), 'utf8').catch(() => '')).trim(),
    );
    if (pid > 0) process.kill(pid, 'SIGINT');
    else stack.kill('SIGKILL');
    await once(stack, 'exit');
  }

  /**
   * Starts a page's `pnpm stack ...` command as written, on the test's free api port; resolves
   * with whether its demo drew its picture.
   */
  async function startStack(command: string): Promise<boolean> {
    stackOut = '';
    port ||= await freePort();
    stack = spawn('pnpm', command.split(' ').slice(1), {
      cwd: clone,
      // The stack's health ports left to the kernel: other tests on this machine hold the fixed ones.
      env: {
        ...userEnv(),
        CG__API__PORT: String(port),
        CG__REAPER__HEALTH_PORT: '0',
        CG__TOOLS__HEALTH_PORT: '0',
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const started = stack;
    return new Promise<boolean>((resolve) => {
      const seen = (b: Buffer) => {
        stackOut += b.toString();
        if (stackOut.includes('[stack] demo succeeded')) resolve(true);
        if (stackOut.includes('[stack] demo FAILED')) resolve(false);
      };
      started.stdout!.on('data', seen);
      started.stderr!.on('data', seen);
      started.once('exit', () => resolve(false));
    });
  }

  afterAll(async () => {
    await stopStack();
    if (dir) {
      // As root in a private folder the stack keeps its sandboxes under /var/lib/toolmesh.
      const id = createHash('sha256').update(clone).digest('hex').slice(0, 12);
      await rm(join('/var/lib/toolmesh', `sandboxes-${id}`), { recursive: true, force: true });
      await rm(dir, { recursive: true, force: true });
    }
  }, 120_000);

  /**
   * A user's environment: no settings of toolmesh's, the clone's `toolmesh` on the PATH. Set-up
   * writes its launcher into a folder of the test's (TOOLMESH_BIN_DIR, which `toolmesh` itself
   * never reads), so the machine's own launcher stays as it is.
   */
  const userEnv = () => {
    const env: Record<string, string> = {};
    for (const [k, v] of Object.entries(process.env)) {
      if (v === undefined || /^(TOOLMESH_|CG__|NATS_URL$|DATABASE_URL$|STACK_DATA_DIR$)/.test(k))
        continue;
      env[k] = v;
    }
    env['TOOLMESH_BIN_DIR'] = join(dir, 'bin');
    env['PATH'] =
      `${join(dir, 'bin')}:${join(clone, 'node_modules/.bin')}:${process.env['PATH'] ?? ''}`;
    return env;
  };
  /** userEnv, with `docker-compose` checking each command instead of running it. */
  const pageEnv = async () => {
    const shims = join(dir, 'compose-check');
    await mkdir(shims, { recursive: true });
    const real = await exec('sh', ['-c', 'command -v docker-compose']).then(
      (r) => r.stdout.trim(),
      () => '',
    );
    const check = join(clone, 'tests/support/compose-check.ts');
    await writeFile(
      join(shims, 'docker-compose'),
      real
        ? `#!/bin/sh\nexec '${process.execPath}' '${check}' '${real}' "$@"\n`
        : `#!/bin/sh\necho 'docker-compose (1.29 or later) is needed to check the compose commands' >&2\nexit 127\n`,
      { mode: 0o755 },
    );
    const env = userEnv();
    env['PATH'] = `${shims}:${env['PATH']}`;
    return env;
  };
  const atPort = (code: string) =>
    code.replaceAll(/(localhost|127\.0\.0\.1):8080\b/g, `$1:${port}`);

  /** Runs a command in a process group of its own; what it left running is stopped after it. */
  async function run(cmd: string, args: string[], env: Record<string, string>, timeoutMs: number) {
    const child = spawn(cmd, args, {
      cwd: clone,
      env,
      stdio: ['ignore', 'pipe', 'pipe'],
      detached: true,
    });
    const group = (signal: NodeJS.Signals) => {
      try {
        process.kill(-child.pid!, signal);
      } catch {
        // the group has ended
      }
    };
    let out = '';
    child.stdout.on('data', (b: Buffer) => (out += b.toString()));
    child.stderr.on('data', (b: Buffer) => (out += b.toString()));
    const timer = setTimeout(() => group('SIGKILL'), timeoutMs);
    const [code] = (await once(child, 'exit')) as [number | null];
    clearTimeout(timer);
    group('SIGTERM');
    return { code, out };
  }

  it("the README's set-up, then `pnpm stack`: the demo draws a picture", async () => {
    const readme = blocksOf('README.md', await readFile(join(clone, 'README.md'), 'utf8'));
    expect(readme.slice(0, 2).map((b) => b.code)).toEqual(['bash scripts/setup.sh', 'pnpm stack']);

    const setup = await run('bash', ['scripts/setup.sh'], userEnv(), 600_000);
    expect(setup.code, setup.out.slice(-4_000)).toBe(0);
    expect(await readFile(join(dir, 'bin', 'toolmesh'), 'utf8')).toContain(
      join(clone, 'packages/cli/src/main.ts'),
    );

    expect(await startStack(readme[1]!.code), stackOut.slice(-6_000)).toBe(true);
    expect(stackOut).not.toMatch(/Violation/);
    // As deployed: no tool reaches loopback, and the stack says how to allow it.
    expect(stackOut).toMatch(
      /^\[stack\] HTTP tools and MCP servers may not reach loopback .*`pnpm stack --allow-loopback`/m,
    );
    // Where the console is, and a key to sign in with; no log line names a key twice.
    expect(stackOut).toMatch(
      /^\[stack\] console on http:\/\/127\.0\.0\.1:\d+\/console: sign in with the key tmk_\S+ \(project local\)$/m,
    );
    expect(linesWithRepeatedKeys(stackOut)).toEqual([]);
    const path = /\[demo\] artifact path: (.+)$/m.exec(stackOut)?.[1];
    expect(path, stackOut.slice(-3_000)).toBeDefined();
    expect(path!.startsWith(join(clone, '.data'))).toBe(true);
    expect((await readFile(path!)).subarray(1, 4).toString()).toBe('PNG');
  }, 900_000);

  it("every page's sh blocks run, in order, as written", async () => {
    expect(stack?.exitCode, 'the stack is running').toBeNull();
    const failures: string[] = [];
    for (const file of await pages(clone)) {
      const blocks = blocksOf(file, await readFile(join(clone, file), 'utf8')).filter(
        (b) => RUN_TAGS.has(b.tag) && !notRun(b),
      );
      let steps = file === 'README.md' ? blocks.slice(2) : blocks; // set-up and stack: above
      const stackBlocks = steps.filter((b) => STACK_COMMAND.test(b.code));
      if (stackBlocks.length > 0) {
        expect(stackBlocks, `${file}: a \`pnpm stack\` command comes first, alone`).toEqual([
          steps[0],
        ]);
        await stopStack();
        const ok = await startStack(steps[0]!.code);
        expect(ok, `${file}:${steps[0]!.line}\n${stackOut.slice(-6_000)}`).toBe(true);
        steps = steps.slice(1);
      }
      if (steps.length === 0) continue;
      const script = [
        'set -euo pipefail',
        ...steps.map((b) => `echo "@@block ${file}:${b.line}" >&2\n${atPort(b.code)}`),
      ].join('\n');
      const r = await run('bash', ['-c', script], await pageEnv(), 300_000);
      if (r.code !== 0) {
        const at = [...r.out.matchAll(/@@block (\S+)/g)].at(-1)?.[1] ?? file;
        failures.push(`${at} exited ${r.code}:\n${r.out.slice(-3_000)}`);
      }
    }
    expect(failures).toEqual([]);
  }, 900_000);

  it('every ts block runs to its end', async () => {
    const failures: string[] = [];
    let n = 0;
    for (const file of await pages(clone)) {
      for (const b of blocksOf(file, await readFile(join(clone, file), 'utf8'))) {
        if (b.tag !== 'ts' || notRun(b)) continue;
        const name = `doc-example-${n++}.ts`;
        await writeFile(join(clone, name), atPort(b.code));
        const r = await run(process.execPath, [name], userEnv(), 60_000);
        if (r.code !== 0)
          failures.push(`${file}:${b.line} exited ${r.code}:\n${r.out.slice(-3_000)}`);
      }
    }
    expect(failures).toEqual([]);
  }, 600_000);
});
