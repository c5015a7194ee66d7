// Every reserved tool, run once through the real mesh (api, skills service, NATS, Postgres) on
// its success path, and its card's `result` checked against the result schema in the catalog,
// the one docs/tools.md is rendered from. The schemas are strict objects all the way down: a
// field a handler adds, drops or retypes without the schema (and so the page) following fails
// here. The last test fails when a reserved tool was not run, so a new one cannot skip this.
import { join } from 'node:path';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { TOOL_CATALOG, catalogTool } from '@toolmesh/skills';
import { startSkillsMesh, type SkillsMesh } from './support/skills-mesh.ts';

let mesh: SkillsMesh;
const checked = new Set<string>();

beforeAll(async () => {
  mesh = await startSkillsMesh();
  await mesh.startSkills();
  await mesh.uploadSkill(join(import.meta.dirname, '..', 'examples/skills/http-hello'));
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const call = (tool: string, args: Record<string, unknown>) =>
  mesh.client.callTool({
    project: mesh.project.id,
    channel: 'main',
    tool,
    arguments: args,
    timeoutMs: 60_000,
  });

/**
 * Runs a tool, expects it to succeed and its result to match the tool's result schema exactly;
 * the same result with one field more must not (the schema is what makes a new field fail).
 */
async function ok<R = Record<string, unknown>>(
  tool: string,
  args: Record<string, unknown>,
): Promise<R> {
  const card = await call(tool, args);
  expect(card.status, `${tool}: ${JSON.stringify(card.content.error)}`).toBe('succeeded');
  const result = card.content.result;
  const schema = catalogTool(tool)!.result;
  const parsed = schema.safeParse(result);
  expect(parsed.error?.issues ?? [], `${tool} result ${JSON.stringify(result)}`).toEqual([]);
  if (tool !== 'builtin.echo') {
    expect(schema.safeParse({ ...(result as object), not_in_schema: 1 }).success).toBe(false);
  }
  checked.add(tool);
  return result as R;
}

it('skills.load, activate and run_cmd file the results their schemas describe', async () => {
  const loaded = await ok<{ placed: boolean; files: string[] }>('skills.load', {
    skill: 'http-hello',
  });
  expect(loaded).toMatchObject({ placed: false, environment: null });
  expect(loaded.files).toContain('SKILL.md');
  expect(await ok('skills.load', { skill: 'http-hello', session_id: 'res-load' })).toMatchObject({
    placed: true,
    session_id: 'res-load',
    location: 'skills/http-hello',
  });
  expect(
    await ok('skills.activate', { skill: 'http-hello', session_id: 'res-load' }),
  ).toMatchObject({ name: 'http-hello', location: 'skills/http-hello', environment: null });
  // With a skill, an artifact and an output that was never written: every field is filled.
  const ran = await ok<{ artifacts: unknown[]; output_errors: unknown[] }>('skills.run_cmd', {
    skill: 'http-hello',
    session_id: 'res-load',
    command: 'echo made > out.txt; echo hi; echo oops >&2',
    outputs: ['out.txt', 'never.txt'],
  });
  expect(ran).toMatchObject({
    exit_code: 0,
    stdout: 'hi\n',
    stderr: 'oops\n',
    skill: { name: 'http-hello' },
    workdir: 'skills/http-hello',
  });
  expect(ran.artifacts).toHaveLength(1);
  expect(ran.output_errors).toMatchObject([{ path: 'never.txt', code: 'missing' }]);
}, 120_000);

it('run_cmd_async and the task tools file the results their schemas describe', async () => {
  const started = await ok<{ task_id: string }>('skills.run_cmd_async', {
    command: 'echo kept > a.txt; echo done',
    session_id: 'res-task',
    outputs: ['a.txt'],
  });
  const watched = await ok('skills.task_watch', {
    task_id: started.task_id,
    timeout_ms: 50_000,
  });
  expect(watched).toMatchObject({ status: 'succeeded', stdout: 'done\n', watch_timed_out: false });
  expect(watched['artifacts']).toHaveLength(1);
  expect(await ok('skills.task_status', { task_id: started.task_id })).toMatchObject({
    status: 'succeeded',
    exit_code: 0,
    endpoints: [],
  });

  const long = await ok<{ task_id: string }>('skills.run_cmd_async', { command: 'sleep 120' });
  expect(await ok('skills.task_cancel', { task_id: long.task_id })).toMatchObject({
    status: 'canceled',
    canceled: true,
  });
}, 120_000);

it('run_service files its endpoints with a token, task_status without', async () => {
  const svc = await ok<{ task_id: string; endpoints: { token?: string }[] }>('skills.run_service', {
    skill: 'http-hello',
    command: 'python3 server.py --port 8000 --greeting hi',
    session_id: 'res-svc',
    expose_ports: [8000],
  });
  expect(svc.endpoints).toHaveLength(1);
  expect(svc.endpoints[0]!.token).toMatch(/^[\w-]{43}$/);
  const status = await ok<{ endpoints: Record<string, unknown>[] }>('skills.task_status', {
    task_id: svc.task_id,
  });
  expect(status.endpoints).toMatchObject([{ port: 8000, active: true }]);
  expect(status.endpoints[0]).not.toHaveProperty('token');
  expect(await ok('skills.task_cancel', { task_id: svc.task_id })).toMatchObject({
    status: 'canceled',
  });
}, 120_000);

it('start_job and the job tools file the results their schemas describe', async () => {
  const job = await ok<{ job_id: string }>('skills.start_job', {
    steps: [{ command: 'echo one' }, { command: 'echo two' }],
    session_id: 'res-job',
  });
  const watched = await ok<{ steps: unknown[] }>('skills.job_watch', {
    job_id: job.job_id,
    timeout_ms: 50_000,
  });
  expect(watched).toMatchObject({ status: 'succeeded', watch_timed_out: false });
  expect(watched.steps).toMatchObject([
    { index: 0, status: 'succeeded', stdout: 'one\n' },
    { index: 1, status: 'succeeded', stdout: 'two\n' },
  ]);
  expect(await ok('skills.job_status', { job_id: job.job_id })).toMatchObject({
    status: 'succeeded',
    error: null,
  });

  // A second step never reached: a `skipped` (or `pending`) step is in the schema too.
  const long = await ok<{ job_id: string }>('skills.start_job', {
    steps: [{ command: 'sleep 120' }, { command: 'echo never' }],
    session_id: 'res-job-2',
  });
  const canceled = await ok<{ steps: { status: string }[] }>('skills.job_cancel', {
    job_id: long.job_id,
  });
  expect(canceled).toMatchObject({ status: 'canceled', canceled: true });
  expect(canceled.steps[0]!.status).toBe('canceled');
}, 120_000);

it('the builtin tools file the results their schemas describe', async () => {
  expect(await ok('builtin.echo', { any: ['thing', 1] })).toEqual({ any: ['thing', 1] });
  expect(await ok('builtin.sleep', { ms: 5 })).toHaveProperty('slept_ms');
  expect(await ok('builtin.execute_python', { code: 'print(6 * 7)' })).toMatchObject({
    exit_code: 0,
    stdout: '42\n',
  });
  expect(await ok('builtin.write_file', { path: 'notes/a.md', content: 'alpha' })).toEqual({
    path: '/notes/a.md',
    size: 5,
    created: true,
  });
  expect(await ok('builtin.read_file', { path: 'notes/a.md' })).toMatchObject({
    content: 'alpha',
  });
  expect(await ok('builtin.list_files', { path: 'notes' })).toMatchObject({
    path: '/notes',
    files: [{ path: '/notes/a.md', size: 5 }],
    truncated: false,
  });

  const loaded = await mesh.api.request(
    'POST',
    `/v1/projects/${mesh.project.id}/documents?collection=mail`,
    {
      key: mesh.project.key,
      payload:
        JSON.stringify({
          id: 'm1',
          title: 'Invoice',
          body: 'The invoice for May',
          metadata: { n: 1 },
        }) + '\n',
      headers: { 'content-type': 'application/x-ndjson' },
    },
  );
  expect(loaded.status, loaded.raw).toBe(200);
  const found = await ok<{ results: { id: string }[] }>('builtin.search_documents', {
    query: 'invoice',
  });
  expect(found.results.map((r) => r.id)).toEqual(['m1']);
  expect(await ok('builtin.get_document', { id: 'm1' })).toMatchObject({
    id: 'm1',
    collection: 'mail',
    metadata: { n: 1 },
  });
}, 120_000);

it('every reserved tool was run and checked above', () => {
  expect([...checked].sort()).toEqual(TOOL_CATALOG.map((t) => t.name).sort());
});
