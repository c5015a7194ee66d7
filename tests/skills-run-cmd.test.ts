// skills.run_cmd through the whole mesh: the example image skill, uploaded through the api, run
// in a bubblewrap sandbox, yields a PNG artifact downloadable through the api; a non-zero exit
// keeps its output; a timeout leaves no process behind; env values arrive verbatim; a missing
// output, an oversize one and a path that escapes are reported; writes outside the workdir and
// network egress are blocked, the denied connection reported.
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT } from './support/mesh.ts';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';
import { processesWith } from './support/procs.ts';

const MAX_OUTPUT_BYTES = 1024 * 1024;
let mesh: SkillsMesh;
beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.startSkills({ CG__SKILLS__MAX_OUTPUT_BYTES: String(MAX_OUTPUT_BYTES) });
  await mesh.uploadSkill(join(REPO_ROOT, 'examples/skills/draw-image'));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const run = (args: Record<string, unknown>, timeoutMs = 60_000) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool: 'skills.run_cmd',
    arguments: args,
    timeoutMs,
  });

describe('skills.run_cmd', () => {
  it('runs the example image skill and returns the PNG as an artifact', async () => {
    const r = await run({
      skill: 'draw-image',
      command: 'python3 draw.py --out out/pic.png --caption hi --width 80 --height 60',
      outputs: ['out/pic.png'],
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const result = r.content.result as {
      exit_code: number;
      artifacts: { artifact_id: string; mime: string; size_bytes: number }[];
      stdout: string;
    };
    expect(result.exit_code).toBe(0);
    expect(JSON.parse(result.stdout)).toMatchObject({ width: 80, height: 60 });
    expect(result.artifacts).toHaveLength(1);
    const a = result.artifacts[0]!;
    expect(a.mime).toBe('image/png');
    const res = await mesh.api.app.inject({
      method: 'GET',
      url: `/v1/projects/${mesh.project.id}/artifacts/${a.artifact_id}/content`,
      headers: { authorization: `Bearer ${mesh.project.key}` },
    });
    expect(res.statusCode).toBe(200);
    expect(res.rawPayload.subarray(1, 4).toString()).toBe('PNG');
    expect(res.rawPayload.readUInt32BE(16)).toBe(80);
    expect(res.rawPayload.length).toBe(a.size_bytes);
  });

  it('a non-zero exit keeps stdout, stderr and the exit code', async () => {
    const r = await run({ command: 'echo to-stdout; echo to-stderr >&2; exit 3' });
    expect(r.status).toBe('succeeded');
    expect(r.content.result).toMatchObject({
      exit_code: 3,
      stdout: 'to-stdout\n',
      stderr: 'to-stderr\n',
    });
  });

  it('keeps the tail of a long output and says it was truncated', async () => {
    const r = await run({ command: 'seq 1 200000; echo THE-END' });
    const result = r.content.result as {
      stdout: string;
      stdout_truncated: boolean;
      stdout_bytes: number;
    };
    expect(result.stdout_truncated).toBe(true);
    expect(result.stdout.endsWith('THE-END\n')).toBe(true);
    expect(result.stdout_bytes).toBeGreaterThan(result.stdout.length);
  });

  it('a command past its time limit ends `timeout` and leaves no process behind', async () => {
    const marker = `tm-timeout-${Date.now()}`;
    // A duration no other test uses, so the child can be found by its command line.
    const child = `61.${process.pid}${Date.now() % 1000}`;
    const r = await run({
      command: `sleep 60 & sleep ${child} & echo started; wait # ${marker}`,
      timeout_ms: 1_000,
    });
    expect(r.status).toBe('timeout');
    expect(r.content.error?.details).toMatchObject({ stdout: 'started\n' });
    expect(await processesWith(marker)).toEqual([]);
    expect(await processesWith(`sleep ${child}`)).toEqual([]);
  });

  it('env values full of shell metacharacters arrive intact and run nothing', async () => {
    const nasty = `$(touch /tmp/pwned-${process.pid}); \`id\` "'; | & > < * ? \\ \n end`;
    const r = await run({ command: 'printf %s "$NASTY"', env: { NASTY: nasty } });
    expect((r.content.result as { stdout: string }).stdout).toBe(nasty);
    await expect(readFile(`/tmp/pwned-${process.pid}`)).rejects.toThrow();
  });

  it("a write outside the workdir is blocked; /tmp is the sandbox's own", async () => {
    const target = `/tmp/toolmesh-escape-${process.pid}`;
    const r = await run({
      command: `echo x > /var/toolmesh-escape; echo rc=$?; echo x > ${target}; echo tmp=$?`,
    });
    const { stdout } = r.content.result as { stdout: string };
    expect(stdout).toMatch(/rc=[1-9]/);
    // A private tmpfs: the write works there and never reaches the host's /tmp.
    expect(stdout).toMatch(/tmp=0/);
    await expect(readFile(target)).rejects.toThrow();
  });

  it('reports a missing output, and refuses an output path that escapes the workdir', async () => {
    const r = await run({ command: 'true', outputs: ['nothing-here.txt'] });
    expect((r.content.result as { output_errors: unknown[] }).output_errors).toEqual([
      expect.objectContaining({ path: 'nothing-here.txt', code: 'missing' }),
    ]);
    const escape = await run({ command: 'true', outputs: ['../etc/passwd'] });
    expect(escape.status).toBe('failed');
    expect(escape.content.error?.code).toBe('invalid_arguments');
  });

  it('reports an output over the size limit and keeps the ones under it', async () => {
    const r = await run({
      command: `head -c ${MAX_OUTPUT_BYTES + 1} /dev/zero > big.bin; echo small > ok.txt`,
      outputs: ['big.bin', 'ok.txt'],
    });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const result = r.content.result as {
      artifacts: { filename: string }[];
      output_errors: { path: string; code: string }[];
    };
    expect(result.output_errors).toEqual([
      expect.objectContaining({ path: 'big.bin', code: 'too_large' }),
    ]);
    expect(result.artifacts.map((a) => a.filename)).toEqual(['ok.txt']);
  });

  it('blocks network egress and reports the denied connection', async () => {
    const r = await run({ command: 'curl -fsS -m 5 http://example.com/; echo rc=$?' });
    expect(r.status, JSON.stringify(r.content)).toBe('succeeded');
    const result = r.content.result as { stdout: string; denials: unknown[] };
    expect(result.stdout).toMatch(/rc=[1-9]/);
    expect(result.denials).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          kind: 'network',
          operation: 'network-outbound',
          target: expect.stringContaining('example.com:80'),
        }),
      ]),
    );
  });

  it('files stay between calls of one session', async () => {
    const first = await run({ command: 'echo kept > note.txt', session_id: 's1' });
    expect(first.status).toBe('succeeded');
    const second = await run({ command: 'cat note.txt', session_id: 's1' });
    expect((second.content.result as { stdout: string }).stdout).toBe('kept\n');
    const other = await run({ command: 'cat note.txt; echo rc=$?', session_id: 's2' });
    expect((other.content.result as { stdout: string }).stdout).toMatch(/rc=1/);
  });
});

describe('skills.load and skills.activate', () => {
  it('load returns SKILL.md and the files; activate places them in the session', async () => {
    const loaded = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.load',
      arguments: { skill: 'draw-image' },
    });
    expect(loaded.status).toBe('succeeded');
    expect(loaded.content.result).toMatchObject({
      name: 'draw-image',
      location: 'skills/draw-image',
      files: expect.arrayContaining(['SKILL.md', 'draw.py']),
    });
    expect((loaded.content.result as { skill_md: string }).skill_md).toContain('name: draw-image');
    const act = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.activate',
      arguments: { skill: 'draw-image', session_id: 'act' },
    });
    expect(act.status).toBe('succeeded');
    const ls = await run({ command: 'ls skills/draw-image', session_id: 'act' });
    expect((ls.content.result as { stdout: string }).stdout).toContain('draw.py');
    const missing = await mesh.client.callTool({
      project: mesh.project.id,
      channel: 'main',
      tool: 'skills.load',
      arguments: { skill: 'nope' },
    });
    expect(missing.status).toBe('failed');
    expect(missing.content.error?.code).toBe('tool_error');
  });
});
