// Skill dependencies on the e2b provider (the real SDK against the fake E2B server): a sandbox
// is a VM of its own, so the install runs inside the session's sandbox, once per sandbox, from
// the configured index, and the build row records it. The fake runs commands on this host,
// with the sandbox paths they name (/home/user/...) mapped into the sandbox's folder.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPackageIndex, type PackageIndex } from '@toolmesh/testing';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { PROVIDER_SETUPS } from './support/sandbox-providers.ts';

const e2b = PROVIDER_SETUPS.find((s) => s.name === 'e2b')!;
/** A call's result as these tests read it. */
type Result = { status: string; content: { result?: any; error?: any } };

let index: PackageIndex;
let mesh: SkillsMesh;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-skill-deps-'));
  index = await startPackageIndex();
  await index.addWheel('e2bpkg', '3.1.0', { 'e2bpkg.py': 'VALUE = "from-the-index"\n' });
  mesh = await startSkillsMesh({
    ...(await e2b.env()),
    CG__SKILLS__PACKAGE_INDEXES: JSON.stringify([index.pythonUrl]),
    CG__SKILLS__PACKAGE_DOWNLOAD_HOSTS: '[]',
  });
  await mesh.startSkills();
  const root = join(dir, 'e2b-skill');
  await mkdir(root);
  await writeFile(
    join(root, 'SKILL.md'),
    '---\nname: e2b-skill\ndescription: Needs e2bpkg.\n---\n\n# e2b-skill\n',
  );
  await writeFile(join(root, 'requirements.txt'), 'e2bpkg==3.1.0\n');
  await mesh.uploadSkill(root);
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await e2b.close();
  await index?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const call = (tool: string, args: Record<string, unknown>) =>
  mesh.client
    .callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: `skills.${tool}`,
      arguments: args,
      timeoutMs: 240_000,
    })
    .then((r) => r as unknown as Result);

it('installs inside the session sandbox once, and the build row records it', async () => {
  const loaded = await call('load', { skill: 'e2b-skill', session_id: 'vm' });
  expect(loaded.status, JSON.stringify(loaded.content)).toBe('succeeded');
  const env = loaded.content.result.environment as { status: string; location: string };
  expect(env).toMatchObject({ status: 'ready', kinds: ['python'] });
  expect(env.location).toMatch(/^\/home\/user\/work\/\.skill-envs\/e2b-skill-[0-9a-f]{16}\/env$/);
  const r = await call('run_cmd', {
    skill: 'e2b-skill',
    session_id: 'vm',
    command: `${env.location}/venv/bin/python -c "import e2bpkg; print(e2bpkg.VALUE)"`,
  });
  expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
  expect(r.content.result.stdout.trim()).toBe('from-the-index');
  // The same session's sandbox already has it: no second install.
  expect(index.requests().filter((p) => p === '/simple/e2bpkg/')).toHaveLength(1);
  const { rows } = await mesh.api.store.pool.query(
    `SELECT provider, status, output_tail FROM state.skill_envs
      WHERE project_id = $1 AND skill_name = 'e2b-skill'`,
    [mesh.project.id],
  );
  expect(rows).toEqual([
    { provider: 'e2b', status: 'ready', output_tail: expect.stringContaining('e2bpkg') },
  ]);
}, 300_000);
