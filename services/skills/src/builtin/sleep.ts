// builtin.sleep: waits for `ms` milliseconds, honouring cancel and the call's deadline. Used to
// exercise timeouts, cancellation and long-running calls.
import { setTimeout as delay } from 'node:timers/promises';
import { SleepArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';

export const sleepTool = defineTool({
  name: 'sleep',
  description: 'Waits for `ms` milliseconds (at most one hour), then returns how long it slept.',
  args: SleepArgs,
  timeoutMs: 3_600_000,
  handler: async ({ ms }, ctx) => {
    const start = performance.now();
    await delay(ms, undefined, { signal: ctx.signal });
    return { slept_ms: Math.round(performance.now() - start) };
  },
});
