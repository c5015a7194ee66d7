// `toolmesh skills list|show|activate`, `toolmesh agents list|show|create|delete` and
// `toolmesh artifacts show|get` as a user runs them: the CLI as a child process against the
// api listening on a port, with a skills service that produces a real artifact. Another
// project's key sees none of it. Each command is a node process of its own: the tests get
// generous timeouts for a loaded machine.
import { spawn } from 'node:child_process';
import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { issueBusCreds } from './support/cli.ts';

const MAIN = join(REPO_ROOT, 'packages/cli/src/main.ts');

let mesh: AgentMesh;
let env: Record<string, string>;
let other: { id: string; key: string };
let tmp: string;

beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startSkills();
  other = await mesh.api.createProject();
  tmp = await mkdtemp(join(tmpdir(), 'toolmesh-cli-resources-'));
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
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

function toolmesh(args: string[], extraEnv: Record<string, string> = {}): Promise<Run> {
  const child = spawn(process.execPath, [MAIN, ...args], {
    env: { ...env, ...extraEnv },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const out: Buffer[] = [];
  let stderr = '';
  child.stdout.on('data', (b: Buffer) => out.push(b));
  child.stderr.on('data', (b: Buffer) => (stderr += b.toString()));
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.once('close', (code) => resolve({ code, stdout: Buffer.concat(out), stderr }));
  });
}

const text = (r: Run) => r.stdout.toString();
const json = (r: Run): any => JSON.parse(text(r));

describe('toolmesh skills', () => {
  it('lists, shows and activates versions, by sha256 prefix', async () => {
    const dir = join(tmp, 'draw-image');
    await cp(join(REPO_ROOT, 'examples/skills/draw-image'), dir, { recursive: true });
    const first = await toolmesh(['skills', 'upload', dir, '--json']);
    expect(first.code, first.stderr).toBe(0);
    const v1 = json(first).version.version as string;
    await writeFile(join(dir, 'NOTES.txt'), 'a second version\n');
    const second = await toolmesh(['skills', 'upload', dir, '--no-activate', '--json']);
    expect(second.code, second.stderr).toBe(0);
    const v2 = json(second).version.version as string;
    expect(v2).not.toBe(v1);

    const list = await toolmesh(['skills', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(text(list)).toMatch(/^NAME\s+ACTIVE\s+ENABLED\s+VERSIONS/);
    expect(text(list)).toMatch(new RegExp(`draw-image\\s+${v1.slice(0, 12)}\\s+true\\s+2`));

    const activated = await toolmesh(['skills', 'activate', 'draw-image', v2.slice(0, 8)]);
    expect(activated.code, activated.stderr).toBe(0);
    expect(text(activated)).toBe(`draw-image ${v2} is active\n`);

    const shown = await toolmesh(['skills', 'show', 'draw-image']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(text(shown)).toMatch(new RegExp(`\\*\\s+${v2}`));
    expect(text(shown)).not.toMatch(new RegExp(`\\*\\s+${v1}`));
    const shownJson = await toolmesh(['skills', 'show', 'draw-image', '--json']);
    expect(json(shownJson)).toMatchObject({ name: 'draw-image', active_version: v2 });
    expect(json(shownJson).version_list).toHaveLength(2);
  }, 180_000);

  it('refuses a bad version, an unknown one and an unknown skill with the exit codes scripts use', async () => {
    const bad = await toolmesh(['skills', 'activate', 'draw-image', 'xyz']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/version must be a sha256 or its first 6\+ hex characters/);
    const unknown = await toolmesh(['skills', 'activate', 'draw-image', 'abcdef0']);
    expect(unknown.code).toBe(4);
    expect(unknown.stderr).toMatch(/skill draw-image has no version abcdef0/);
    const missing = await toolmesh(['skills', 'show', 'no-such-skill']);
    expect(missing.code).toBe(4);
    expect(missing.stderr).toMatch(/404/);
  }, 180_000);

  it("another project's key sees none of this project's skills", async () => {
    const list = await toolmesh(['skills', 'list', '--json'], {
      TOOLMESH_API_KEY: other.key,
      TOOLMESH_PROJECT: other.id,
    });
    expect(list.code, list.stderr).toBe(0);
    expect(json(list).skills.map((s: { name: string }) => s.name)).not.toContain('draw-image');
    // Its key against this project's path is refused, as if the project did not exist.
    const across = await toolmesh(['skills', 'show', 'draw-image'], {
      TOOLMESH_API_KEY: other.key,
      TOOLMESH_PROJECT: mesh.project.id,
    });
    expect(across.code).toBe(4);
    expect(text(across)).toBe('');
  }, 180_000);
});

describe('toolmesh agents', () => {
  it('creates, lists, shows and deletes an agent', async () => {
    await mesh.api.request('POST', `/v1/projects/${mesh.project.id}/profiles`, {
      key: mesh.project.key,
      body: { name: 'helper', allowed_tools: ['builtin.*'], system_prompt: 'Help.' },
    });
    const created = await toolmesh([
      'agents',
      'create',
      'scout',
      '--name',
      'Scout',
      '--profile',
      'helper',
    ]);
    expect(created.code, created.stderr).toBe(0);
    expect(text(created)).toBe('agent scout created\n');

    const list = await toolmesh(['agents', 'list']);
    expect(list.code, list.stderr).toBe(0);
    expect(text(list)).toMatch(/scout\s+Scout\s+helper/);

    const shown = await toolmesh(['agents', 'show', 'scout', '--json']);
    expect(shown.code, shown.stderr).toBe(0);
    expect(json(shown)).toMatchObject({ id: 'scout', name: 'Scout', profile: 'helper' });

    const again = await toolmesh(['agents', 'create', 'scout']);
    expect(again.code).toBe(1);
    expect(again.stderr).toMatch(/already exists/);
    const bad = await toolmesh(['agents', 'create', 'bad id!']);
    expect(bad.code).toBe(2);
    const noProfile = await toolmesh(['agents', 'create', 'lost', '--profile', 'nope']);
    expect(noProfile.code).toBe(2);
    expect(noProfile.stderr).toMatch(/profile "nope" does not exist/);

    const across = await toolmesh(['agents', 'show', 'scout'], {
      TOOLMESH_API_KEY: other.key,
      TOOLMESH_PROJECT: other.id,
    });
    expect(across.code).toBe(4);

    const deleted = await toolmesh(['agents', 'delete', 'scout']);
    expect(deleted.code, deleted.stderr).toBe(0);
    const gone = await toolmesh(['agents', 'show', 'scout']);
    expect(gone.code).toBe(4);
  }, 180_000);
});

describe('toolmesh artifacts', () => {
  it('downloads an artifact a skill produced, to a file or to stdout', async () => {
    const sync = await mesh.api.request(
      'GET',
      `/v1/projects/${mesh.project.id}/skills/draw-image`,
      {
        key: mesh.project.key,
      },
    );
    expect(sync.status).toBe(200);
    const run = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.run_cmd',
      arguments: {
        skill: 'draw-image',
        command: 'python3 draw.py --out out/pic.png --caption cli --width 40 --height 30',
        outputs: ['out/pic.png'],
      },
    });
    expect(run.status, JSON.stringify(run)).toBe('succeeded');
    const artifact = (
      run.content.result as { artifacts: { artifact_id: string; size_bytes: number }[] }
    ).artifacts[0]!;

    const file = join(tmp, 'pic.png');
    const got = await toolmesh(['artifacts', 'get', artifact.artifact_id, '-o', file]);
    expect(got.code, got.stderr).toBe(0);
    expect(text(got)).toBe(`${file} (${artifact.size_bytes} bytes, image/png)\n`);
    const png = await readFile(file);
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    expect(png.length).toBe(artifact.size_bytes);

    const piped = await toolmesh(['artifacts', 'get', artifact.artifact_id]);
    expect(piped.code, piped.stderr).toBe(0);
    expect(piped.stdout.equals(png)).toBe(true);

    const shown = await toolmesh(['artifacts', 'show', artifact.artifact_id, '--json']);
    expect(json(shown)).toMatchObject({
      artifact_id: artifact.artifact_id,
      mime: 'image/png',
      size_bytes: artifact.size_bytes,
    });

    // --json cannot share stdout with the bytes; another project cannot fetch it.
    const mixed = await toolmesh(['artifacts', 'get', artifact.artifact_id, '--json']);
    expect(mixed.code).toBe(2);
    const across = await toolmesh(
      ['artifacts', 'get', artifact.artifact_id, '-o', join(tmp, 'x')],
      {
        TOOLMESH_API_KEY: other.key,
        TOOLMESH_PROJECT: other.id,
      },
    );
    expect(across.code).toBe(4);
    expect(across.stdout.length).toBe(0);
    await expect(readFile(join(tmp, 'x'))).rejects.toThrow();
    const unknown = await toolmesh(['artifacts', 'get', '0190f2a4-0000-7000-8000-000000000000']);
    expect(unknown.code).toBe(4);
    const bad = await toolmesh(['artifacts', 'get', 'not-a-uuid']);
    expect(bad.code).toBe(2);
  }, 180_000);
});
