// The thread CLI end to end: toolmesh thread start, say (with and without --wait) and show,
// against the api and an agent worker with the scripted model.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runToolmesh } from './support/cli.ts';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { plusOne, threadApi, userTexts } from './support/threads.ts';

let mesh: AgentMesh;
const { answered } = threadApi(() => mesh);
beforeAll(async () => {
  mesh = await startAgentMesh();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

describe('CLI', () => {
  it('toolmesh thread start, say (--wait) and show', { timeout: 240_000 }, async () => {
    const agent = await mesh.createAgent({
      id: 'cli-talker',
      script: [{ text: 'Hello, Ada.' }, plusOne, (req) => ({ text: userTexts(req).join(' / ') })],
    });
    const address = await mesh.api.app.listen({ host: '127.0.0.1', port: 0 });
    const cli = (args: string[]) =>
      runToolmesh(args, {
        TOOLMESH_API_URL: address,
        TOOLMESH_API_KEY: mesh.project.key,
        TOOLMESH_PROJECT: mesh.project.id,
      });
    const started = await cli(['thread', 'start', agent, '--title', 'from the shell']);
    expect(started.code, started.stderr).toBe(0);
    const thread = started.stdout.trim();
    expect(thread).toMatch(/^[0-9a-f-]{36}$/);

    const first = await cli([
      'thread',
      'say',
      agent,
      thread,
      '-i',
      'I am Ada. My secret number is 6.',
      '--wait',
    ]);
    expect(first.code, first.stderr).toBe(0);
    expect(first.stdout.trim()).toBe('Hello, Ada.');
    const second = await cli([
      'thread',
      'say',
      agent,
      thread,
      '-i',
      'My number plus one?',
      '--wait',
    ]);
    expect(second.code, second.stderr).toBe(0);
    expect(second.stdout.trim()).toBe('7');
    // Without --wait: the message's number; its answer comes later.
    const third = await cli(['thread', 'say', agent, thread, '-i', 'Repeat all I said.']);
    expect(third.code, third.stderr).toBe(0);
    expect(third.stdout).toMatch(/^message 3 sent \(task [0-9a-f-]{36}\)$/m);
    await answered(agent, thread, 3);

    const shown = await cli(['thread', 'show', agent, thread]);
    expect(shown.code, shown.stderr).toBe(0);
    expect(shown.stdout.split('\n').filter(Boolean)).toEqual([
      `thread ${thread} with ${agent} — from the shell`,
      '[1] you: I am Ada. My secret number is 6.',
      '[1] cli-talker: Hello, Ada.',
      '[2] you: My number plus one?',
      '[2] cli-talker: 7',
      '[3] you: Repeat all I said.',
      '[3] cli-talker: I am Ada. My secret number is 6. / My number plus one? / Repeat all I said.',
    ]);
    const json = await cli(['thread', 'show', agent, thread, '--json']);
    expect(JSON.parse(json.stdout)).toMatchObject({ thread_id: thread, messages: 3 });

    const other = await mesh.api.createProject();
    const refused = await runToolmesh(['thread', 'show', agent, thread], {
      TOOLMESH_API_URL: address,
      TOOLMESH_API_KEY: other.key,
      TOOLMESH_PROJECT: mesh.project.id,
    });
    expect(refused.code).not.toBe(0);
    expect(refused.stderr).toContain('not found');
  });
});
