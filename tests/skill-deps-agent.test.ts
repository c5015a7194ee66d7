// Through an agent: a skill whose requirements.txt names a wheel on the local index is loaded
// into a session by the (scripted) model, which then runs it where the prompt and the tool
// descriptions say the skill is placed, and submits the artifact it made. A second agent's
// session, on the same version, starts without installing again.
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startPackageIndex, type PackageIndex, type RecordedChatRequest } from '@toolmesh/testing';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';

let index: PackageIndex;
let mesh: AgentMesh;
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(join(tmpdir(), 'toolmesh-skill-deps-'));
  index = await startPackageIndex();
  await index.addWheel('tinygif', '2.0.0', {
    'tinygif/__init__.py':
      'def make(path, text):\n    open(path, "wb").write(b"GIF89a" + text.encode())\n',
  });
  mesh = await startAgentMesh({
    CG__SKILLS__PACKAGE_INDEXES: JSON.stringify([index.pythonUrl]),
    CG__SKILLS__PACKAGE_DOWNLOAD_HOSTS: '[]',
  });
  await mesh.startSkills();
  await mesh.startWorker();
  const root = join(dir, 'gif-maker');
  await mkdir(root);
  await writeFile(
    join(root, 'SKILL.md'),
    '---\nname: gif-maker\ndescription: Makes a tiny GIF that says something.\n---\n\n' +
      'Run `python3 make.py <out.gif> <text>` in the skill folder.\n',
  );
  await writeFile(join(root, 'requirements.txt'), 'tinygif==2.0.0\n');
  await writeFile(
    join(root, 'make.py'),
    'import sys, tinygif\ntinygif.make(sys.argv[1], sys.argv[2])\nprint("made", sys.argv[1])\n',
  );
  await mesh.uploadSkill(root);
}, 60_000);
afterAll(async () => {
  await mesh?.close();
  await index?.close();
  if (dir) await rm(dir, { recursive: true, force: true });
});

const lastTool = (req: RecordedChatRequest) =>
  JSON.parse(String(req.body.messages.filter((m) => m.role === 'tool').at(-1)?.content)) as {
    status: string;
    result: any;
  };
/** What the model reads off its prompt: the folder `<available_skills>` gives the skill. */
const locationIn = (req: RecordedChatRequest, skill: string) => {
  const system = String(req.body.messages[0]?.content);
  const m = new RegExp(
    `<name>${skill}</name>\\n<description>[^<]*</description>\\n<location>([^<]+)</location>`,
  ).exec(system);
  return m?.[1] ?? 'not-in-the-prompt';
};
const submitArtifact = (req: RecordedChatRequest) => {
  const seen = lastTool(req);
  return {
    toolCalls: [
      {
        name: 'submit_result',
        arguments: { result: { artifact_id: seen.result?.artifacts?.[0]?.artifact_id ?? null } },
      },
    ],
  };
};

it('an agent loads a skill with dependencies, runs it where it is placed, and submits the GIF', async () => {
  const agent = await mesh.createAgent({
    id: 'gifbot',
    allowedTools: ['skills.*'],
    systemPrompt: 'Use your skills.',
    script: [
      {
        toolCalls: [
          { name: 'skills__load', arguments: { skill: 'gif-maker', session_id: 'work' } },
        ],
      },
      (req) => ({
        toolCalls: [
          {
            name: 'skills__run_cmd',
            arguments: {
              session_id: 'work',
              skill: 'gif-maker',
              // The folder the prompt states, as a model would pass it.
              workdir: locationIn(req, 'gif-maker'),
              command: 'python3 make.py out.gif hello',
              outputs: ['out.gif'],
            },
          },
        ],
      }),
      submitArtifact,
    ],
  });
  const task = await mesh.finished(
    await mesh.startTask(agent, 'Make a GIF that says hello.'),
    240_000,
  );
  expect(task.status, JSON.stringify(task)).toBe('succeeded');

  const [first, second, third] = mesh.requestsOf(agent);
  // The prompt, the tool descriptions and the placement agree on skills/<name>.
  expect(locationIn(first!, 'gif-maker')).toBe('skills/gif-maker');
  const tools = new Map(
    first!.body.tools!.map((t) => [t.function.name, t.function.description ?? '']),
  );
  expect(tools.get('skills__load')).toContain('skills/<name>/');
  expect(tools.get('skills__activate')).toContain('skills/<name>/');
  for (const d of tools.values()) expect(d).not.toMatch(/(^|[^s])skill\//);
  const loaded = lastTool(second!);
  expect(loaded.status).toBe('succeeded');
  expect(loaded.result).toMatchObject({
    location: 'skills/gif-maker',
    placed: true,
    environment: { status: 'ready', kinds: ['python'], builds: 1 },
  });
  expect(loaded.result.skill_md).toContain('python3 make.py');
  expect(loaded.result.files).toEqual(expect.arrayContaining(['make.py', 'requirements.txt']));
  const ran = lastTool(third!);
  expect(ran.status, JSON.stringify(ran)).toBe('succeeded');
  expect(ran.result).toMatchObject({ exit_code: 0, workdir: 'skills/gif-maker' });

  // The artifact the model submitted is the GIF.
  const artifactId = task.final_card!.content.result.artifact_id as string;
  const res = await mesh.api.app.inject({
    method: 'GET',
    url: `/v1/projects/${mesh.project.id}/artifacts/${artifactId}/content`,
    headers: { authorization: `Bearer ${mesh.project.key}` },
  });
  expect(res.statusCode).toBe(200);
  expect(res.rawPayload.toString()).toBe('GIF89ahello');
  expect(index.requests().filter((p) => p === '/simple/tinygif/')).toHaveLength(1);

  // Another agent, so another session and sandbox: the version's environment is already there.
  const other = await mesh.createAgent({
    id: 'gifbot2',
    allowedTools: ['skills.*'],
    script: [
      {
        toolCalls: [
          {
            name: 'skills__run_cmd',
            arguments: {
              skill: 'gif-maker',
              command: 'python3 make.py bye.gif bye',
              outputs: ['bye.gif'],
            },
          },
        ],
      },
      submitArtifact,
    ],
  });
  const again = await mesh.finished(
    await mesh.startTask(other, 'Make one that says bye.'),
    120_000,
  );
  expect(again.status, JSON.stringify(again)).toBe('succeeded');
  expect(lastTool(mesh.requestsOf(other)[1]!).result.exit_code).toBe(0);
  expect(index.requests().filter((p) => p === '/simple/tinygif/')).toHaveLength(1);
  const { rows } = await mesh.api.store.pool.query(
    `SELECT status, builds FROM state.skill_envs WHERE project_id = $1 AND skill_name = 'gif-maker'`,
    [mesh.project.id],
  );
  expect(rows).toEqual([{ status: 'ready', builds: 1 }]);
}, 400_000);
