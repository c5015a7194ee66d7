// Skills in the open Agent Skills format (agentskills.io): three skills written in the shape of
// the public anthropics/skills collection (tests/fixtures/skills) pass `toolmesh skills
// validate`, upload through the api with their optional front matter kept, and load through the
// skills service as an agent loads them (skills.load gives the instructions, skills.activate
// places the files in a session where skills.run_cmd reads them and runs the bundled script);
// skills that break the format's rules (name, description, compatibility, metadata) get the same
// verdict from the CLI, without uploading, as from the api's upload.
import { mkdtemp, mkdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipFolder } from '@toolmesh/cli';
import type { TestApi } from '../services/api/src/test/support.ts';
import { runToolmesh } from './support/cli.ts';
import { REPO_ROOT } from './support/mesh.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

const FIXTURES = join(REPO_ROOT, 'tests/fixtures/skills');

let mesh: SkillsMesh;
let api: TestApi;
let project: { id: string; key: string };
let scratch: string;

beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.startSkills();
  api = mesh.api;
  project = mesh.project;
  scratch = await mkdtemp(join(tmpdir(), 'toolmesh-skills-format-'));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  if (scratch) await rm(scratch, { recursive: true, force: true });
});

async function upload(data: Buffer) {
  const boundary = '----toolmesh-skills-format';
  const payload = Buffer.concat([
    Buffer.from(
      `--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="skill.zip"\r\nContent-Type: application/zip\r\n\r\n`,
    ),
    data,
    Buffer.from(`\r\n--${boundary}--\r\n`),
  ]);
  return api.request('POST', `/v1/projects/${project.id}/skills`, {
    key: project.key,
    payload,
    headers: { 'content-type': `multipart/form-data; boundary=${boundary}` },
  });
}

const validate = (dir: string) => runToolmesh(['skills', 'validate', dir, '--json'], {});

describe('skills in the Agent Skills format', () => {
  it.each(['csv-summary', 'brand-voice', 'release-checklist'])(
    '%s validates without uploading, and uploads with its front matter kept',
    async (name) => {
      const dir = join(FIXTURES, name);
      const checked = await validate(dir);
      expect(checked.code, checked.stderr).toBe(0);
      const verdict = JSON.parse(checked.stdout) as {
        valid: boolean;
        name: string;
        version: string;
        unknown_fields: string[];
      };
      expect(verdict).toMatchObject({ valid: true, name });

      const res = await upload(await zipFolder(dir));
      expect(res.status, res.raw).toBe(201);
      expect(res.body.skill.name).toBe(name);
      // The same zip: the version the CLI computed is the one the api stored.
      expect(res.body.version.version).toBe(verdict.version);
      expect(res.body.version.front_matter).toMatchObject({ name, license: expect.any(String) });
    },
  );

  it('keeps compatibility, metadata and allowed-tools, and reports a field the format lacks', async () => {
    const dir = join(FIXTURES, 'release-checklist');
    const checked = await validate(dir);
    expect(JSON.parse(checked.stdout).unknown_fields).toEqual(['version']);
    const plain = await runToolmesh(['skills', 'validate', dir], {});
    expect(plain.stdout).toContain('release-checklist: valid');
    expect(plain.stdout).toContain('version is not Agent Skills front matter');
    const res = await upload(await zipFolder(dir));
    expect(res.body.version.front_matter).toMatchObject({
      compatibility: expect.stringContaining('Needs git'),
      metadata: { author: 'toolmesh tests', category: 'engineering' },
      'allowed-tools': 'Bash(git log:*) Bash(git tag:*) Read Write',
      version: '1.2.0',
    });
  });

  it('gives the same verdict as the upload for skills that break the format', async () => {
    const cases: { folder: string; front: string; code: string; message: RegExp }[] = [
      {
        folder: 'Report-Maker',
        front: 'name: Report-Maker',
        code: 'invalid_name',
        message: /lowercase/,
      },
      {
        folder: 'double--hyphen',
        front: 'name: double--hyphen',
        code: 'invalid_name',
        message: /single hyphens/,
      },
      {
        folder: '-leading',
        front: 'name: -leading',
        code: 'invalid_name',
        message: /not at the start or end/,
      },
      {
        folder: 'snake_case',
        front: 'name: snake_case',
        code: 'invalid_name',
        message: /lowercase/,
      },
      {
        folder: 'long-description',
        front: `name: long-description\ndescription: ${'x'.repeat(1025)}`,
        code: 'invalid_description',
        message: /1025 characters; at most 1024/,
      },
      {
        folder: 'too-compatible',
        front: `name: too-compatible\ncompatibility: ${'y'.repeat(501)}`,
        code: 'invalid_front_matter',
        message: /compatibility is 501 characters; at most 500/,
      },
      {
        folder: 'numeric-metadata',
        front: 'name: numeric-metadata\nmetadata:\n  build: 7',
        code: 'invalid_front_matter',
        message: /metadata value of "build" must be a string/,
      },
      {
        folder: 'folder-name',
        front: 'name: other-name',
        code: 'name_mismatch',
        message: /its folder is "folder-name"/,
      },
    ];
    for (const c of cases) {
      const dir = join(scratch, c.folder);
      await mkdir(dir, { recursive: true });
      const front = c.front.includes('description:')
        ? c.front
        : `${c.front}\ndescription: Does a thing.`;
      await writeFile(join(dir, 'SKILL.md'), `---\n${front}\n---\n\n# Skill\n`);
      const checked = await validate(dir);
      expect(checked.code, c.folder).toBe(2);
      const cli = JSON.parse(checked.stdout) as { error: { code: string; message: string } };
      expect(cli.error.code, c.folder).toBe(c.code);
      expect(cli.error.message).toMatch(c.message);

      const res = await upload(await zipFolder(dir));
      expect(res.status, `${c.folder}: ${res.raw}`).toBe(400);
      expect(res.body.error.code).toBe(c.code);
      expect(res.body.error.message).toBe(cli.error.message);
    }
    // None of them was stored.
    const list = await api.request('GET', `/v1/projects/${project.id}/skills`, {
      key: project.key,
    });
    const names = (list.body as { skills: { name: string }[] }).skills.map((s) => s.name);
    expect(names.sort()).toEqual(['brand-voice', 'csv-summary', 'release-checklist']);
  });
});

/** A skills tool called as an agent calls it, on the project's own bus credential. */
async function skill<T>(tool: string, args: Record<string, unknown>, as = project.id) {
  const r = await mesh.client.callTool({
    project: as,
    channel: 'main',
    tool: `skills.${tool}`,
    arguments: args,
    timeoutMs: 60_000,
  });
  return { status: r.status, result: r.content.result as T, error: r.content.error };
}

/** SKILL.md without its front matter: the instructions an agent follows. */
async function instructions(name: string) {
  const text = await readFile(join(FIXTURES, name, 'SKILL.md'), 'utf8');
  return text.slice(text.indexOf('\n---\n', 4) + 5).trim();
}

interface Loaded {
  name: string;
  description: string;
  version: string;
  location: string;
  files: string[];
  skill_md: string;
  placed: boolean;
  environment: unknown;
}
interface Ran {
  exit_code: number;
  stdout: string;
  stderr: string;
}

describe('skills in the Agent Skills format, loaded as an agent loads them', () => {
  beforeAll(async () => {
    // Uploading the same folder again keeps its version: these tests also run on their own.
    for (const name of ['csv-summary', 'brand-voice', 'release-checklist']) {
      await mesh.uploadSkill(join(FIXTURES, name));
    }
  });

  it.each([
    ['csv-summary', ['LICENSE.txt', 'SKILL.md', 'scripts/summarize.py']],
    ['brand-voice', ['LICENSE.txt', 'SKILL.md', 'reference/voice.md']],
    ['release-checklist', ['LICENSE.txt', 'SKILL.md', 'templates/CHANGELOG-entry.md']],
  ])(
    '%s loads with its instructions and files, and needs nothing installed',
    async (name, files) => {
      const checked = JSON.parse((await validate(join(FIXTURES, name))).stdout) as {
        version: string;
      };
      const loaded = await skill<Loaded>('load', { skill: name });
      expect(loaded.status, JSON.stringify(loaded.error)).toBe('succeeded');
      expect(loaded.result).toMatchObject({
        name,
        version: checked.version,
        location: `skills/${name}`,
        placed: false,
        // No requirements.txt, pyproject.toml or package.json: no environment to build, no network.
        environment: null,
      });
      expect(loaded.result.files.slice().sort()).toEqual(files);
      const md = await readFile(join(FIXTURES, name, 'SKILL.md'), 'utf8');
      expect(loaded.result.skill_md).toBe(md);
      expect(loaded.result.skill_md).toContain(await instructions(name));
      expect(loaded.result.description).toMatch(/^.{20,}Use (for|when) /);
    },
  );

  it('activate places the files in a session, where run_cmd reads them as written', async () => {
    for (const name of ['brand-voice', 'release-checklist']) {
      const act = await skill<{ location: string }>('activate', {
        skill: name,
        session_id: 'reader',
      });
      expect(act.status, JSON.stringify(act.error)).toBe('succeeded');
    }
    // Both skills sit side by side in the one session's workdir.
    const voice = await skill<Ran>('run_cmd', {
      command: 'cat skills/brand-voice/reference/voice.md',
      session_id: 'reader',
    });
    expect(voice.status, JSON.stringify(voice.error)).toBe('succeeded');
    expect(voice.result.exit_code).toBe(0);
    expect(voice.result.stdout).toBe(
      await readFile(join(FIXTURES, 'brand-voice/reference/voice.md'), 'utf8'),
    );
    // With `skill`, the command runs in the skill's folder, as SKILL.md's relative paths expect.
    const template = await skill<Ran>('run_cmd', {
      skill: 'release-checklist',
      command: 'cat templates/CHANGELOG-entry.md',
      session_id: 'reader',
    });
    expect(template.status, JSON.stringify(template.error)).toBe('succeeded');
    expect(template.result.stdout).toBe(
      await readFile(join(FIXTURES, 'release-checklist/templates/CHANGELOG-entry.md'), 'utf8'),
    );
  });

  it("csv-summary's bundled script runs in the sandbox as its SKILL.md says", async () => {
    const csv = 'name,score,joined\nada,91,2024-01-05\nbob,,2024-02-10\ncy,78,2024-03-01\n';
    const r = await skill<Ran>('run_cmd', {
      skill: 'csv-summary',
      command: `printf '${csv}' > data.csv && python3 scripts/summarize.py data.csv`,
      session_id: 'csv',
    });
    expect(r.status, JSON.stringify(r.error)).toBe('succeeded');
    expect(r.result.exit_code, r.result.stderr).toBe(0);
    expect(JSON.parse(r.result.stdout)).toEqual({
      rows: 3,
      columns: {
        name: { type: 'text', empty: 0 },
        score: { type: 'integer', empty: 1, min: 78, max: 91 },
        joined: { type: 'date', empty: 0 },
      },
    });
  });

  it("another project cannot load or run the project's skills", async () => {
    const own = await skill<Loaded>('load', { skill: 'brand-voice' });
    expect(own.status).toBe('succeeded');
    const other = await api.createProject();
    const loaded = await skill<Loaded>('load', { skill: 'brand-voice' }, other.id);
    expect(loaded.status).toBe('failed');
    // Told the same as for a skill that does not exist anywhere.
    expect(loaded.error).toMatchObject({
      code: 'tool_error',
      message: 'no skill named "brand-voice" in this project',
    });
    expect(JSON.stringify(loaded.error)).not.toContain('Northwind');
    const ran = await skill<Ran>(
      'run_cmd',
      { skill: 'brand-voice', command: 'cat SKILL.md' },
      other.id,
    );
    expect(ran.status).toBe('failed');
    expect(ran.error?.message).toBe('no skill named "brand-voice" in this project');
    expect(JSON.stringify(ran)).not.toContain('Northwind');
  });
});
