// Skills in the open Agent Skills format (agentskills.io): three skills written in the shape of
// the public anthropics/skills collection (tests/fixtures/skills) pass `toolmesh skills
// validate` and upload through the api with their optional front matter kept; skills that break
// the format's rules (name, description, compatibility, metadata) get the same verdict from the
// CLI, without uploading, as from the api's upload.
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { zipFolder } from '@toolmesh/cli';
import { startTestApi, type TestApi } from '../services/api/src/test/support.ts';
import { runToolmesh } from './support/cli.ts';
import { REPO_ROOT } from './support/mesh.ts';

const FIXTURES = join(REPO_ROOT, 'tests/fixtures/skills');

let api: TestApi;
let project: { id: string; key: string };
let scratch: string;

beforeAll(async () => {
  api = await startTestApi();
  project = await api.createProject();
  scratch = await mkdtemp(join(tmpdir(), 'toolmesh-skills-format-'));
});
afterAll(async () => {
  await api?.close();
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
