// The everything fixture on the 2026-07-28 revision: stateless requests (no initialize, each
// request carries its protocol version and client capabilities in `_meta`), served by the 2.x
// SDK's createMcpHandler with a server per request. Its tools, resources, prompts and
// completions are the 2025 server's (mcp-everything-features.ts), reached over an in-memory
// 1.x client, so both revisions serve the same registrations; on top, what only this revision
// has: the multi-round-trip tools, prompt and resource (mcp-everything-input.ts), the
// capability-gated `test_missing_capability`, a tool whose argument travels in an
// `Mcp-Param-*` header (x-mcp-header, SEP-2243; the SDK checks the header against the body);
// and Tasks, the `io.modelcontextprotocol/tasks` extension with the tools the suite's Tasks
// scenarios name (mcp-everything-tasks.ts).
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js';
import { ResultSchema } from '@modelcontextprotocol/sdk/types.js';
import {
  McpServer,
  MissingRequiredClientCapabilityError,
  ProtocolError,
  createMcpHandler,
  fromJsonSchema,
  type McpHttpHandler,
} from '@modelcontextprotocol/server';
import { createEverythingServer, type EverythingState } from './mcp-everything-features.ts';
import { INPUT_PROMPT, INPUT_TOOLS, runInputStep, signState } from './mcp-everything-input.ts';
import { TASKS_EXTENSION, TASK_TOOLS, type FixtureTasks } from './mcp-everything-tasks.ts';

const CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities';
const LIST_HINT = { ttlMs: 300_000, cacheScope: 'public' as const };

/** SEP-2243: `region` travels in the `Mcp-Param-Region` header too. */
const HEADER_TOOL = {
  name: 'test_header_param',
  description: 'Echoes a region that is also sent as the Mcp-Param-Region header',
  inputSchema: {
    type: 'object' as const,
    properties: { region: { type: 'string', 'x-mcp-header': 'Region' } },
    required: ['region'],
  },
};
/** SEP-2575 diagnostics: a call's stream carries only its own messages; no log unasked. */
const STREAMING_TOOL = {
  name: 'test_streaming_elicitation',
  description: 'Sends a progress notification on its response stream, then its result',
  inputSchema: { type: 'object' as const, properties: {} },
};
const LOGGING_TOOL = {
  name: 'test_logging_tool',
  description: 'Logs only when the request asked for a log level',
  inputSchema: { type: 'object' as const, properties: {} },
};
const LOG_LEVEL_META = 'io.modelcontextprotocol/logLevel';
const MISSING_CAPABILITY_TOOL = {
  name: 'test_missing_capability',
  description: 'Needs a client that declared sampling',
  inputSchema: { type: 'object' as const, properties: {} },
};

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** One request to the 2025 server's registrations, over an in-memory 1.x client. */
async function dispatch(
  state: EverythingState,
  method: string,
  params: Record<string, unknown>,
  notify?: (n: { method: string; params?: Record<string, unknown> }) => Promise<void> | void,
  progressToken?: string | number,
): Promise<Record<string, unknown>> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  const server = createEverythingServer(state);
  await server.connect(serverSide);
  const client = new Client({ name: 'everything-modern', version: '1.0.0' });
  client.fallbackNotificationHandler = async (n) => {
    await notify?.(n);
  };
  try {
    await client.connect(clientSide);
    // The in-memory client mints its own progress token: the request's own goes back out.
    const onprogress =
      progressToken === undefined
        ? undefined
        : (p: Record<string, unknown>) => {
            void notify?.({ method: 'notifications/progress', params: { ...p, progressToken } });
          };
    return await client.request({ method, params }, ResultSchema, {
      ...(onprogress ? { onprogress } : {}),
    });
  } catch (err) {
    const e = err as { code?: unknown; message?: string; data?: unknown };
    // The 1.x error to the 2.x server's: the code and data as the 2025 server answered.
    if (typeof e.code === 'number') {
      const data = e.data ?? (method === 'resources/read' ? { uri: params['uri'] } : undefined);
      throw new ProtocolError(e.code, (e.message ?? '').replace(/^MCP error -?\d+: /, ''), data);
    }
    throw err;
  } finally {
    await client.close().catch(() => undefined);
    await server.close().catch(() => undefined);
  }
}

/** The methods whose answer may be `input_required` (SEP-2322). */
type SteppedMethod = 'tools/call' | 'prompts/get' | 'resources/read';

function modernServer(state: EverythingState, tasks: FixtureTasks) {
  const mcp = new McpServer(
    { name: 'mcp-conformance-test-server', version: '1.0.0' },
    {
      capabilities: {
        tools: { listChanged: true },
        resources: {},
        prompts: { listChanged: true },
        completions: {},
        extensions: { [TASKS_EXTENSION]: {} },
      },
    },
  );
  // Registered so that the SDK knows its header declaration (checked before the handler runs).
  mcp.registerTool(
    HEADER_TOOL.name,
    {
      description: HEADER_TOOL.description,
      inputSchema: fromJsonSchema(HEADER_TOOL.inputSchema),
    },
    (args: unknown) => ({
      content: [{ type: 'text', text: `region: ${String((args as { region?: unknown }).region)}` }],
    }),
  );
  const s = mcp.server;
  const forward = (method: string) => async (req: { params?: unknown }) =>
    await dispatch(state, method, (req.params ?? {}) as Record<string, unknown>);

  s.setRequestHandler('tools/list', async () => {
    const listed = await dispatch(state, 'tools/list', {});
    const tools = (listed['tools'] as unknown[]) ?? [];
    return {
      tools: [
        ...tools,
        HEADER_TOOL,
        MISSING_CAPABILITY_TOOL,
        STREAMING_TOOL,
        LOGGING_TOOL,
        ...INPUT_TOOLS,
        ...TASK_TOOLS,
      ],
      ...LIST_HINT,
    } as never;
  });
  s.setRequestHandler('prompts/list', async () => {
    const listed = await dispatch(state, 'prompts/list', {});
    return {
      prompts: [...((listed['prompts'] as unknown[]) ?? []), INPUT_PROMPT],
      ...LIST_HINT,
    } as never;
  });
  for (const method of ['resources/list', 'resources/templates/list'] as const) {
    s.setRequestHandler(
      method,
      async (req) => ({ ...(await forward(method)(req)), ...LIST_HINT }) as never,
    );
  }
  s.setRequestHandler(
    'completion/complete',
    async (req) => (await forward('completion/complete')(req)) as never,
  );

  const stepped = (method: SteppedMethod) => async (req: unknown, c: unknown) => {
    const ctx = c as {
      mcpReq: {
        envelope?: unknown;
        _meta?: { progressToken?: string | number };
        inputResponses?: Record<string, unknown>;
        signal: AbortSignal;
        requestState(): unknown;
        notify(n: unknown): Promise<void>;
      };
    };
    const params = { ...((req as { params?: Record<string, unknown> }).params ?? {}) };
    const raw = ctx.mcpReq.requestState();
    const withInput = {
      ...params,
      ...(ctx.mcpReq.inputResponses !== undefined
        ? { inputResponses: ctx.mcpReq.inputResponses }
        : {}),
      ...(raw !== undefined ? { requestState: raw } : {}),
    };
    const envelope = ctx.mcpReq.envelope;
    const caps = isRecord(envelope) ? envelope[CLIENT_CAPABILITIES] : undefined;
    const capabilities = isRecord(caps) ? caps : {};
    const tasked =
      method === 'tools/call' ? tasks.call(withInput, capabilities, ctx.mcpReq.signal) : undefined;
    if (tasked) return (await tasked) as never;
    if (method === 'tools/call' && params['name'] === MISSING_CAPABILITY_TOOL.name) {
      if (!capabilities['sampling']) {
        throw new MissingRequiredClientCapabilityError({
          requiredCapabilities: { sampling: {} },
        });
      }
      return { content: [{ type: 'text', text: 'Success' }] } as never;
    }
    if (method === 'tools/call' && params['name'] === STREAMING_TOOL.name) {
      const token = ctx.mcpReq._meta?.progressToken;
      if (token !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/progress',
          params: { progressToken: token, progress: 50, total: 100 },
        });
      }
      return { content: [{ type: 'text', text: 'Streaming complete' }] } as never;
    }
    if (method === 'tools/call' && params['name'] === LOGGING_TOOL.name) {
      if (isRecord(envelope) && envelope[LOG_LEVEL_META] !== undefined) {
        await ctx.mcpReq.notify({
          method: 'notifications/message',
          params: { level: 'info', logger: 'conformance-test-server', data: 'Logging activated' },
        });
      }
      return { content: [{ type: 'text', text: 'Logging evaluated' }] } as never;
    }
    if (method === 'tools/call' && params['name'] === HEADER_TOOL.name) {
      const region = (params['arguments'] as { region?: unknown } | undefined)?.region;
      return { content: [{ type: 'text', text: `region: ${String(region)}` }] } as never;
    }
    const step = runInputStep(method, withInput, capabilities);
    if (step?.kind === 'error') throw new ProtocolError(step.code, step.message);
    if (step?.kind === 'complete') return step.result as never;
    if (step?.kind === 'input') {
      return {
        resultType: 'input_required',
        inputRequests: step.inputRequests,
        ...(step.state ? { requestState: signState(step.state) } : {}),
      } as never;
    }
    if (method === 'resources/read') {
      return {
        ...(await dispatch(state, method, params)),
        ttlMs: 0,
        cacheScope: 'private',
      } as never;
    }
    // Progress and log messages of the 2025 server's tool reach this request's stream.
    return (await dispatch(
      state,
      method,
      params,
      (n) => ctx.mcpReq.notify(n),
      ctx.mcpReq._meta?.progressToken,
    )) as never;
  };
  s.setRequestHandler('tools/call', stepped('tools/call'));
  s.setRequestHandler('prompts/get', stepped('prompts/get'));
  s.setRequestHandler('resources/read', stepped('resources/read'));
  tasks.register(s, (c) => {
    const envelope = (c as { mcpReq?: { envelope?: unknown } }).mcpReq?.envelope;
    const caps = isRecord(envelope) ? envelope[CLIENT_CAPABILITIES] : undefined;
    return isRecord(caps) ? caps : {};
  });
  return mcp;
}

/** The fixture's 2026-07-28 handler: one server per request, the request's envelope at hand. */
export function createModernEverything(
  state: EverythingState,
  tasks: FixtureTasks,
): McpHttpHandler {
  return createMcpHandler(() => modernServer(state, tasks), { legacy: 'reject' });
}
