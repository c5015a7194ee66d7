// A thread's next message starts the moment the turn before it ends, on the worker that ended
// it (or the api, when it was canceled): not when the periodic scan next looks (once a second
// by default). Messages sent while a turn runs find their thread busy; their wakeups are spent
// then, so nothing but the end of the running turn can start them promptly. The scan here is
// set to an hour, so a waiting message left to it never starts within the test: the waits below
// are generous and no stopwatch is needed.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startAgentMesh, type AgentMesh } from './support/agent-mesh.ts';
import { until } from './support/procs.ts';
import { threadApi, userTexts } from './support/threads.ts';

let mesh: AgentMesh;
beforeAll(async () => {
  mesh = await startAgentMesh({ CG__AGENT__SCAN_INTERVAL_MS: '3600000' });
  await mesh.startSkills();
  await mesh.startWorker();
}, 60_000);
afterAll(async () => {
  await mesh?.close();
});

const { api, show, openThread, say, answered } = threadApi(() => mesh);

describe('thread handoff', { timeout: 60_000 }, () => {
  it('each waiting message starts as the turn before it ends, without waiting for the scan', async () => {
    const agent = await mesh.createAgent({
      id: 'relay',
      script: [
        { text: 'first done', delayMs: 1_000 },
        (req) => ({ text: `second saw: ${userTexts(req).join(' | ')}` }),
        (req) => ({
          toolCalls: [
            { name: 'submit_result', arguments: { result: `third saw ${userTexts(req).length}` } },
          ],
        }),
      ],
    });
    const thread = await openThread(agent);
    await say(agent, thread, 'one');
    await until(() => Promise.resolve(mesh.requestsOf(agent).length === 1 ? true : undefined));
    await say(agent, thread, 'two');
    await say(agent, thread, 'three');

    const first = await answered(agent, thread, 1, 45_000);
    const third = await answered(agent, thread, 3, 45_000);
    expect(third.final_card?.content.result).toBe('third saw 3');
    expect(first.status).toBe('succeeded');
    const view = await show(agent, thread);
    expect(view.turns.map((t) => t.status)).toEqual(['succeeded', 'succeeded', 'succeeded']);
  });

  it("the message after a canceled turn starts at once too; another project's cancel is refused", async () => {
    const agent = await mesh.createAgent({
      id: 'interrupted',
      script: [
        { delayMs: 30_000, text: 'too late' },
        (req) => ({ text: `after the cancel: ${userTexts(req).join(' | ')}` }),
      ],
    });
    const thread = await openThread(agent);
    const one = await say(agent, thread, 'one');
    await until(() => Promise.resolve(mesh.requestsOf(agent).length === 1 ? true : undefined));
    await say(agent, thread, 'two');
    // Another project's key can neither cancel the turn nor, so, start the waiting message.
    const other = await mesh.api.createProject();
    const refused = await api(
      'POST',
      `/tasks/${one.task_id}/cancel`,
      { reason: 'mine' },
      other.key,
    );
    expect(refused.status, refused.raw).toBe(404);
    const during = await show(agent, thread);
    expect(during.turns.map((t) => t.status)).toEqual(['running', 'pending']);

    const stop = await api('POST', `/tasks/${one.task_id}/cancel`, { reason: 'enough' });
    expect(stop.status, stop.raw).toBe(200);
    const second = await answered(agent, thread, 2, 45_000);
    expect(second.status).toBe('succeeded');
    expect(second.final_card?.content.result).toBe('after the cancel: one | two');
  });
});
