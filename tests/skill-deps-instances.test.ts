// A skill environment is built once across instances: two skills services (one call slot each,
// so two calls at once land on both) asked at the same moment for the same version's
// environment build it once; the other waits on the build row and uses the result.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPackageIndex, type PackageIndex } from '@toolmesh/testing';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

/** A call's result as these tests read it. */
type Result = { status: string; content: { result?: any; error?: any } };

let index: PackageIndex;
let mesh: SkillsMesh;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-skill-deps-'));
  // A slow index: the first build is still running when the second call asks.
  index = await startPackageIndex({ delayMs: 1_500 });
  await index.addWheel('slowpkg', '0.1.0', { 'slowpkg.py': 'VALUE = 42\n' });
  mesh = await startSkillsMesh({
    CG__SKILLS__PACKAGE_INDEXES: JSON.stringify([index.pythonUrl]),
    CG__SKILLS__PACKAGE_DOWNLOAD_HOSTS: '[]',
    CG__TOOLS__CONCURRENCY: '1',
  });
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-a' });
  await mesh.startSkills({ CG__SERVICE__INSTANCE_ID: 'skills-b' });
  const root = join(dir, 'slow-skill');
  await mkdir(root);
  await writeFile(
    join(root, 'SKILL.md'),
    '---\nname: slow-skill\ndescription: Needs slowpkg.\n---\n\n# slow-skill\n',
  );
  await writeFile(join(root, 'requirements.txt'), 'slowpkg\n');
  await mesh.uploadSkill(root);
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await index?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

it('two instances asked at once build the environment once', async () => {
  const ids = ['deps-a', 'deps-b'].map((s) => `${s}-${Date.now()}`);
  const results = await Promise.all(
    ids.map((id, i) =>
      mesh.client
        .callTool({
          project: mesh.project.id,
          channel: 'main',
          tool: 'skills.run_cmd',
          toolCallId: id,
          arguments: {
            skill: 'slow-skill',
            session_id: `s${i}`,
            command: 'python3 -c "import slowpkg; print(slowpkg.VALUE)"',
          },
          timeoutMs: 240_000,
        })
        .then((r) => r as unknown as Result),
    ),
  );
  for (const r of results) {
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    expect(r.content.result.stdout.trim()).toBe('42');
  }
  const { rows: ran } = await mesh.api.store.pool.query<{ instance_id: string }>(
    'SELECT instance_id FROM state.tool_executions WHERE tool_call_id = ANY($1)',
    [ids],
  );
  expect(ran.map((r) => r.instance_id).sort()).toEqual(['skills-a', 'skills-b']);
  const { rows: envs } = await mesh.api.store.pool.query(
    `SELECT status, builds, owner_instance FROM state.skill_envs
      WHERE project_id = $1 AND skill_name = 'slow-skill'`,
    [mesh.project.id],
  );
  expect(envs).toEqual([
    { status: 'ready', builds: 1, owner_instance: expect.stringMatching(/^skills-[ab]$/) },
  ]);
  expect(index.requests().filter((p) => p === '/simple/slowpkg/')).toHaveLength(1);
}, 300_000);
