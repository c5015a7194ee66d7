// Skill dependencies through the whole mesh, against a local package index (no internet): a
// skill's requirements.txt (and package.json) is installed once per version into a cached
// environment that every session placing that version reads; a failed install reports the
// installer's tail; a requirements file that names an index of its own is refused; and another
// project's sandbox cannot see the environment.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPackageIndex, type PackageIndex } from '@toolmesh/testing';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

/** A call's result as these tests read it. */
type Result = { status: string; content: { result?: any; error?: any } };

let index: PackageIndex;
let mesh: SkillsMesh;
let dir: string;

/** Writes a skill folder `name` with SKILL.md and `files`. */
async function skillDir(name: string, files: Record<string, string>): Promise<string> {
  const root = join(dir, name);
  await mkdir(root, { recursive: true });
  await writeFile(
    join(root, 'SKILL.md'),
    `---\nname: ${name}\ndescription: A test skill with dependencies.\n---\n\n# ${name}\n`,
  );
  for (const [p, text] of Object.entries(files)) await writeFile(join(root, p), text);
  return root;
}

const MAKE_PY = `import sys, tinygif\ntinygif.make(sys.argv[1], sys.argv[2])\nprint(tinygif.__version__, tinygif.__file__)\n`;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-skill-deps-'));
  index = await startPackageIndex();
  await index.addWheel('tinygif', '1.2.0', {
    'tinygif/__init__.py':
      '__version__ = "1.2.0"\ndef make(path, text):\n    open(path, "wb").write(b"GIF89a" + text.encode())\n',
  });
  await index.addNpmPackage('padder', '1.0.0', {
    'index.js': 'module.exports = (s, n) => String(s).padStart(n, "*");\n',
  });
  mesh = await startSkillsMesh({
    CG__SKILLS__PACKAGE_INDEXES: JSON.stringify([index.pythonUrl]),
    CG__SKILLS__NPM_REGISTRY: index.npmUrl,
    CG__SKILLS__PACKAGE_DOWNLOAD_HOSTS: '[]',
  });
  await mesh.startSkills();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await index?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (
  tool: string,
  args: Record<string, unknown>,
  project: { id: string } = mesh.project,
  timeoutMs = 180_000,
) =>
  mesh.client
    .callTool({
      project: project.id,
      channel: 'main',
      tool: `skills.${tool}`,
      arguments: args,
      timeoutMs,
    })
    .then((r) => r as unknown as Result);

const getSkill = async (name: string, project = mesh.project) => {
  const res = await mesh.api.request('GET', `/v1/projects/${project.id}/skills/${name}`, {
    key: project.key,
  });
  return res;
};

const hits = (path: string) => index.requests().filter((p) => p === path).length;

describe('skill dependencies', () => {
  it('installs requirements.txt once per version and every session uses it', async () => {
    const version = await mesh.uploadSkill(
      await skillDir('gif-maker', { 'requirements.txt': 'tinygif==1.2.0\n', 'make.py': MAKE_PY }),
    );

    // Nothing is built by reading the skill.
    const read = await call('load', { skill: 'gif-maker' });
    expect(read.status, JSON.stringify(read.content)).toBe('succeeded');
    expect(read.content.result).toMatchObject({
      location: 'skills/gif-maker',
      placed: false,
      environment: { status: 'not_built', kinds: ['python'] },
    });
    expect(read.content.result.files).toEqual(
      expect.arrayContaining(['SKILL.md', 'requirements.txt', 'make.py']),
    );
    expect(hits('/simple/tinygif/')).toBe(0);

    // load with a session places it and builds the environment.
    const loaded = await call('load', { skill: 'gif-maker', session_id: 'one' });
    expect(loaded.status, JSON.stringify(loaded.content)).toBe('succeeded');
    expect(loaded.content.result).toMatchObject({
      placed: true,
      environment: { status: 'ready', kinds: ['python'], builds: 1 },
    });
    expect(hits('/simple/tinygif/')).toBe(1);

    const first = await call('run_cmd', {
      skill: 'gif-maker',
      session_id: 'one',
      command: 'python3 make.py out.gif hello',
      outputs: ['out.gif'],
    });
    expect(first.status, JSON.stringify(first.content)).toBe('succeeded');
    const r1 = first.content.result as { exit_code: number; stdout: string; artifacts: unknown[] };
    expect(r1.exit_code, JSON.stringify(r1)).toBe(0);
    expect(r1.stdout).toMatch(/^1\.2\.0 /);
    expect(r1.artifacts).toHaveLength(1);

    // A second session (a fresh sandbox) of the same version installs nothing.
    const second = await call('run_cmd', {
      skill: 'gif-maker',
      session_id: 'two',
      command: 'python3 make.py again.gif hi && cat again.gif',
    });
    expect(second.status, JSON.stringify(second.content)).toBe('succeeded');
    expect(second.content.result.stdout).toContain('GIF89ahi');
    expect(hits('/simple/tinygif/')).toBe(1);
    expect(hits('/files/tinygif-1.2.0-py3-none-any.whl')).toBe(1);

    // The environment is read-only to the session.
    const write = await call('run_cmd', {
      skill: 'gif-maker',
      session_id: 'two',
      command: 'touch "$VIRTUAL_ENV/x" && echo wrote || echo refused',
    });
    expect(write.content.result.stdout).toContain('refused');

    // The api shows the build job.
    const res = await getSkill('gif-maker');
    expect(res.status).toBe(200);
    const v = (res.body.version_list as { version: string; environments: any[] }[]).find(
      (x) => x.version === version,
    );
    expect(v?.environments).toEqual([
      expect.objectContaining({
        provider: 'local',
        status: 'ready',
        kinds: ['python'],
        builds: 1,
        error: null,
      }),
    ]);
    expect(v?.environments[0].output_tail).toContain('tinygif');
  }, 300_000);

  it('reports a failed install with the installer output, and the api shows it', async () => {
    await mesh.uploadSkill(
      await skillDir('broken-deps', { 'requirements.txt': 'nosuchthing==9.9\n' }),
    );
    const r = await call('run_cmd', { skill: 'broken-deps', command: 'true', session_id: 'b' });
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({
      code: 'dependency_install_failed',
      details: { skill: 'broken-deps', timed_out: false },
    });
    expect(r.content.error.details.output_tail).toMatch(
      /No matching distribution found for nosuchthing/,
    );
    const res = await getSkill('broken-deps');
    expect(res.body.version_list[0].environments[0]).toMatchObject({
      status: 'failed',
      error: expect.objectContaining({ exit_code: 1 }),
    });
    expect(res.body.version_list[0].environments[0].output_tail).toContain('nosuchthing');
  }, 300_000);

  it('refuses a requirements.txt that names its own index', async () => {
    await mesh.uploadSkill(
      await skillDir('own-index', {
        'requirements.txt': '--extra-index-url https://example.com/simple/\ntinygif\n',
      }),
    );
    const r = await call('run_cmd', { skill: 'own-index', command: 'true' });
    expect(r.status).toBe('failed');
    expect(r.content.error).toMatchObject({
      code: 'invalid_dependencies',
      details: { file: 'requirements.txt' },
    });
    expect(r.content.error.message).toContain('configured indexes');
  }, 60_000);

  it('installs package.json dependencies from the npm registry', async () => {
    await mesh.uploadSkill(
      await skillDir('node-pad', {
        'package.json': JSON.stringify({ name: 'node-pad', dependencies: { padder: '^1.0.0' } }),
        'pad.js': 'console.log(require("padder")("x", 4));\n',
      }),
    );
    const r = await call('run_cmd', { skill: 'node-pad', command: 'node pad.js' });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(r.content.result.stdout.trim()).toBe('***x');
    expect(hits('/npm/padder')).toBeGreaterThanOrEqual(1);
  }, 300_000);

  it("another project's sandbox cannot reach a project's environment", async () => {
    const loaded = await call('load', { skill: 'gif-maker', session_id: 'one' });
    const location = loaded.content.result.environment.location as string;
    expect(location).toMatch(/^\//);
    const other = await mesh.api.createProject();
    // The other project does not have the skill at all...
    const load = await call('load', { skill: 'gif-maker' }, other);
    expect(load.status).toBe('failed');
    expect(load.content.error.message).toContain('no skill named');
    // Its key cannot read the first project's skill (and its environments) over the api...
    const across = await mesh.api.request(
      'GET',
      `/v1/projects/${mesh.project.id}/skills/gif-maker`,
      { key: other.key },
    );
    expect([401, 403, 404]).toContain(across.status);
    expect(across.raw).not.toContain('environments');
    expect((await getSkill('gif-maker', other)).status).toBe(404);
    // ...and its sandboxes do not see the folder, by path or by import.
    const peek = await call(
      'run_cmd',
      {
        command: `ls "${location}" 2>&1 || echo hidden; python3 -c "import tinygif" 2>&1 | tail -1`,
      },
      other,
    );
    expect(peek.status, JSON.stringify(peek.content)).toBe('succeeded');
    expect(peek.content.result.stdout).toContain('hidden');
    expect(peek.content.result.stdout).toContain('No module named');
    expect(peek.content.result.stdout).not.toContain('venv');
  }, 120_000);
});
