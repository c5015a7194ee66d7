// The tools of the test MCP servers (streamable HTTP in-process, stdio inside a sandbox), built
// with the official SDK's McpServer. Each shows one behaviour the MCP tool kind must handle:
// a plain answer, an isError result, progress, a call that waits for its cancellation, a
// process that dies mid-call, and names that are not registry ids.
import type { McpServer, RegisteredTool } from '@modelcontextprotocol/sdk/server/mcp.js';
import { ElicitResultSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

/** What the servers remember across calls (per process). */
export interface FixtureState {
  /** Calls whose cancellation the server saw (their request's signal fired). */
  canceled: number;
}

export const FIXTURE_TOOLS = [
  'echo',
  'fail',
  'progress',
  'hang',
  'crash',
  'stats',
  'reach',
  'ns.dotted',
  'a name with spaces and far too long to ever become an id of sixty four characters at most',
] as const;
export type FixtureTool = (typeof FIXTURE_TOOLS)[number];
/** A tool served only when named in `tools`: it elicits twice. */
export const INTERVIEW_TOOL = 'interview';

export function registerFixtureTools(
  server: McpServer,
  state: FixtureState,
  only: readonly string[] = FIXTURE_TOOLS,
): Map<string, RegisteredTool> {
  const out = new Map<string, RegisteredTool>();
  const add = (name: string, make: () => RegisteredTool) => {
    if (only.includes(name)) out.set(name, make());
  };
  add('echo', () =>
    server.registerTool(
      'echo',
      {
        description: 'Returns its text',
        inputSchema: { text: z.string().describe('what to echo') },
        outputSchema: { text: z.string() },
        annotations: { readOnlyHint: true, idempotentHint: true, openWorldHint: false },
      },
      ({ text }) => ({
        content: [{ type: 'text', text: `echo: ${text}` }],
        structuredContent: { text },
      }),
    ),
  );
  add('fail', () =>
    server.registerTool(
      'fail',
      { description: 'Always reports a tool error', inputSchema: { why: z.string().optional() } },
      ({ why }) => ({
        isError: true,
        content: [{ type: 'text', text: `it broke: ${why ?? 'no reason'}` }],
      }),
    ),
  );
  add('progress', () =>
    server.registerTool(
      'progress',
      {
        description: 'Reports `steps` progress notifications, then answers',
        inputSchema: { steps: z.number().int().min(1).max(50) },
      },
      async ({ steps }, extra) => {
        const token = extra._meta?.progressToken;
        for (let i = 1; i <= steps; i++) {
          if (token !== undefined) {
            await extra.sendNotification({
              method: 'notifications/progress',
              params: { progressToken: token, progress: i, total: steps, message: `step ${i}` },
            });
          }
        }
        return { content: [{ type: 'text', text: `did ${steps} steps` }] };
      },
    ),
  );
  add('hang', () =>
    server.registerTool(
      'hang',
      {
        description: 'Reports one progress notification, then waits until it is canceled',
        inputSchema: {},
      },
      async (_args, extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 0, message: 'hanging' },
          });
        }
        await new Promise<void>((resolve) => {
          if (extra.signal.aborted) resolve();
          extra.signal.addEventListener('abort', () => resolve(), { once: true });
        });
        state.canceled++;
        return { content: [{ type: 'text', text: 'canceled' }] };
      },
    ),
  );
  add('crash', () =>
    server.registerTool(
      'crash',
      { description: 'Ends the server process in the middle of the call', inputSchema: {} },
      async (_args, extra) => {
        const token = extra._meta?.progressToken;
        if (token !== undefined) {
          await extra.sendNotification({
            method: 'notifications/progress',
            params: { progressToken: token, progress: 0, message: 'about to crash' },
          });
        }
        process.stderr.write('fixture: crashing on purpose\n');
        process.exit(3);
      },
    ),
  );
  add('stats', () =>
    server.registerTool(
      'stats',
      { description: 'What the server saw: canceled calls, its pid', inputSchema: {} },
      () => ({
        content: [{ type: 'text', text: JSON.stringify({ canceled: state.canceled }) }],
        structuredContent: { canceled: state.canceled, pid: process.pid },
      }),
    ),
  );
  add('reach', () =>
    server.registerTool(
      'reach',
      {
        description:
          'Tries an HTTP GET of a URL from the server process; says whether it got through',
        inputSchema: { url: z.string() },
      },
      async ({ url }) => {
        try {
          const res = await fetch(url, { signal: AbortSignal.timeout(5_000) });
          return {
            content: [{ type: 'text', text: `status ${res.status}` }],
            structuredContent: { ok: true },
          };
        } catch (err) {
          const cause = (err as { cause?: { code?: string } }).cause;
          return {
            content: [{ type: 'text', text: String(err) }],
            structuredContent: { ok: false, error: cause?.code ?? String(err) },
          };
        }
      },
    ),
  );
  // Only when named (not in FIXTURE_TOOLS): asks its client two questions in turn.
  add(INTERVIEW_TOOL, () =>
    server.registerTool(
      INTERVIEW_TOOL,
      { description: 'Asks for a name, then a colour (elicitation)', inputSchema: {} },
      async (_args, extra) => {
        const ask = async (message: string, field: string) => {
          const res = await extra.sendRequest(
            {
              method: 'elicitation/create',
              params: {
                message,
                requestedSchema: {
                  type: 'object',
                  properties: { [field]: { type: 'string' } },
                  required: [field],
                },
              },
            },
            ElicitResultSchema,
          );
          return res.action === 'accept' ? String(res.content?.[field]) : res.action;
        };
        const name = await ask('Your name?', 'name');
        const colour = await ask(`${name}, your colour?`, 'colour');
        return { content: [{ type: 'text', text: `${name} likes ${colour}` }] };
      },
    ),
  );
  for (const name of FIXTURE_TOOLS.filter((n) => n.includes('.') || n.includes(' '))) {
    add(name, () =>
      server.registerTool(name, { description: `a tool named ${name}`, inputSchema: {} }, () => ({
        content: [{ type: 'text', text: name }],
      })),
    );
  }
  return out;
}
