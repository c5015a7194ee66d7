// The everything fixture's Tasks on the 2026-07-28 revision: the `io.modelcontextprotocol/tasks`
// extension (SEP-2663) with the tools the conformance suite's Tasks scenarios name. The server
// decides which call becomes a task: a task-supporting tool called by a request that declares
// the extension (in its `_meta` client capabilities) answers a CreateTaskResult and runs on;
// `tasks/get` carries the outcome (the result, or a protocol error), `tasks/update` delivers
// answers to the elicitations a task waits for (any subset of them; other keys are ignored),
// `tasks/cancel` stops it. Without the extension those methods are -32021, a task-supporting
// tool runs in the request, and a task-required one is -32021. Tasks live in this fixture's
// memory for its lifetime.
import { randomUUID } from 'node:crypto';
import {
  MissingRequiredClientCapabilityError,
  ProtocolError,
  type Server,
} from '@modelcontextprotocol/server';
import { z } from 'zod';
import { signState, verifyState, type InputRequest } from './mcp-everything-input.ts';

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks';
const TTL_MS = 600_000;
const POLL_MS = 100;

type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

interface FixtureTask {
  id: string;
  status: Status;
  createdAt: string;
  lastUpdatedAt: string;
  result?: Record<string, unknown>;
  error?: { code: number; message: string };
  /** Open elicitations by key, each with the resolver of its answer. */
  waiting: Map<string, { request: InputRequest; answer: (r: Record<string, unknown>) => void }>;
  abort: AbortController;
}

type Support = 'forbidden' | 'optional' | 'required';

interface TaskTool {
  description: string;
  support: Support;
  inputSchema: Record<string, unknown>;
  /** Runs the tool as a task: its result, or throws a ProtocolError (the task fails). */
  run(args: Record<string, unknown>, t: TaskRun): Promise<Record<string, unknown>>;
}

interface TaskRun {
  signal: AbortSignal;
  /** Parks the task input_required until tasks/update answers `key`. */
  elicit(key: string, request: InputRequest): Promise<Record<string, unknown>>;
}

const text = (t: string) => ({ content: [{ type: 'text', text: t }] });
/** A string argument, or the fallback. */
const str = (v: unknown, fallback: string) => (typeof v === 'string' ? v : fallback);
const obj = (properties: Record<string, unknown> = {}) => ({ type: 'object', properties });

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) return reject(new Error('cancelled'));
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', stop);
      resolve();
    }, ms);
    const stop = () => {
      clearTimeout(timer);
      reject(new Error('cancelled'));
    };
    signal.addEventListener('abort', stop, { once: true });
  });
}

const confirmRequest = (message: string, field = 'confirm'): InputRequest => ({
  method: 'elicitation/create',
  params: {
    mode: 'form',
    message,
    requestedSchema: { type: 'object', properties: { [field]: { type: 'boolean' } } },
  },
});

const accepted = (r: Record<string, unknown> | undefined) => r?.['action'] === 'accept';

const TOOLS: Record<string, TaskTool> = {
  slow_compute: {
    description: 'Sleeps `seconds` seconds, then answers (a task when the client has Tasks)',
    support: 'optional',
    inputSchema: obj({ seconds: { type: 'number' }, label: { type: 'string' } }),
    run: async (args, t) => {
      const seconds = typeof args['seconds'] === 'number' ? args['seconds'] : 0;
      await sleep(seconds * 1000, t.signal);
      return text(`computed ${str(args['label'], '')} after ${seconds}s`);
    },
  },
  failing_job: {
    description: 'A task-only job that ends with a tool error',
    support: 'required',
    inputSchema: obj(),
    run: async (_args, t) => {
      await sleep(300, t.signal);
      return { ...text('the job failed'), isError: true };
    },
  },
  protocol_error_job: {
    description: 'A job whose server fails it with a protocol error',
    support: 'optional',
    inputSchema: obj(),
    run: async (_args, t) => {
      await sleep(100, t.signal);
      throw new ProtocolError(-32603, 'the job crashed');
    },
  },
  confirm_delete: {
    description: 'Asks the client to confirm (elicitation) before it deletes a file',
    support: 'optional',
    inputSchema: obj({ filename: { type: 'string' } }),
    run: async (args, t) => {
      const name = str(args['filename'], 'the file');
      const answer = await t.elicit('confirm', confirmRequest(`Delete ${name}?`));
      return text(accepted(answer) ? `Deleted ${name}` : `Kept ${name}`);
    },
  },
  multi_input: {
    description: 'Asks two questions at once (two elicitations pending together)',
    support: 'optional',
    inputSchema: obj(),
    run: async (_args, t) => {
      const [a, b] = await Promise.all([
        t.elicit('first', confirmRequest('First question')),
        t.elicit('second', confirmRequest('Second question')),
      ]);
      return text(`answers: ${String(a['action'])}, ${String(b['action'])}`);
    },
  },
};

/** MRTR first (SEP-2322), then a task on the round that has the answer (SEP-2663). */
const COMPOSED = 'test_tool_with_task';
const GREET = 'greet';

/** The tools of this module, as tools/list shows them. */
export const TASK_TOOLS = [
  {
    name: GREET,
    description: 'Says hello (never a task)',
    inputSchema: obj({ name: { type: 'string' } }),
    execution: { taskSupport: 'forbidden' },
  },
  ...Object.entries(TOOLS).map(([name, t]) => ({
    name,
    description: t.description,
    inputSchema: t.inputSchema,
    execution: { taskSupport: t.support },
  })),
  {
    name: COMPOSED,
    description: 'Asks for a name (input_required), then greets it as a task',
    inputSchema: obj(),
    execution: { taskSupport: 'required' },
  },
];

const needsTasks = () =>
  new MissingRequiredClientCapabilityError({
    requiredCapabilities: { extensions: { [TASKS_EXTENSION]: {} } },
  });

const isRecord = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

/** Does a request's capabilities object declare the tasks extension? */
export function declaresTasks(capabilities: Record<string, unknown>): boolean {
  const ext = capabilities['extensions'];
  return isRecord(ext) && isRecord(ext[TASKS_EXTENSION]);
}

export interface FixtureTasks {
  /** A tools/call of a tool of this module; undefined for any other tool. */
  call(
    params: Record<string, unknown>,
    capabilities: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> | undefined;
  /** Registers tasks/get, tasks/update and tasks/cancel on a server of one request. */
  register(server: Server, capabilitiesOf: (ctx: unknown) => Record<string, unknown>): void;
  stop(): void;
}

export function createFixtureTasks(): FixtureTasks {
  const tasks = new Map<string, FixtureTask>();

  const touch = (t: FixtureTask, status: Status) => {
    t.status = status;
    t.lastUpdatedAt = new Date().toISOString();
  };

  function start(run: (t: TaskRun) => Promise<Record<string, unknown>>): Record<string, unknown> {
    const now = new Date().toISOString();
    const task: FixtureTask = {
      id: randomUUID(),
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      waiting: new Map(),
      abort: new AbortController(),
    };
    tasks.set(task.id, task);
    const handle: TaskRun = {
      signal: task.abort.signal,
      elicit: (key, request) =>
        new Promise((answer) => {
          task.waiting.set(key, { request, answer });
          touch(task, 'input_required');
        }),
    };
    run(handle).then(
      (result) => {
        if (task.status === 'cancelled') return;
        task.result = result;
        touch(task, 'completed');
      },
      (err: unknown) => {
        if (task.status === 'cancelled') return;
        const e = err as { code?: unknown; message?: string };
        task.error = {
          code: typeof e.code === 'number' ? e.code : -32603,
          message: e.message ?? 'failed',
        };
        touch(task, 'failed');
      },
    );
    return {
      resultType: 'task',
      taskId: task.id,
      status: 'working',
      createdAt: task.createdAt,
      lastUpdatedAt: task.lastUpdatedAt,
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
    };
  }

  function call(
    params: Record<string, unknown>,
    capabilities: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>> | undefined {
    const name = params['name'];
    const args = isRecord(params['arguments']) ? params['arguments'] : {};
    const tasked = declaresTasks(capabilities);
    if (name === GREET) {
      return Promise.resolve(text(`Hello, ${str(args['name'], 'World')}!`));
    }
    if (name === COMPOSED) {
      if (!tasked) return Promise.reject(needsTasks());
      const responses = isRecord(params['inputResponses']) ? params['inputResponses'] : undefined;
      const raw = params['requestState'];
      const state = typeof raw === 'string' ? verifyState(raw) : undefined;
      const answer = responses?.['user_name'];
      const content = isRecord(answer) ? answer['content'] : undefined;
      const user = isRecord(content) ? content['name'] : undefined;
      if (state?.['kind'] === 'composed' && typeof user === 'string') {
        return Promise.resolve(
          start(async (t) => {
            await sleep(100, t.signal);
            return text(`Hello, ${user}!`);
          }),
        );
      }
      return Promise.resolve({
        resultType: 'input_required',
        inputRequests: {
          user_name: {
            method: 'elicitation/create',
            params: {
              message: 'What is your name?',
              requestedSchema: obj({ name: { type: 'string' } }),
            },
          },
        },
        requestState: signState({ kind: 'composed' }),
      });
    }
    const tool = typeof name === 'string' ? TOOLS[name] : undefined;
    if (!tool) return undefined;
    if (tasked) return Promise.resolve(start((t) => tool.run(args, t)));
    if (tool.support === 'required') return Promise.reject(needsTasks());
    // Without Tasks, in the request: questions become MRTR input requests (SEP-2322).
    const responses = isRecord(params['inputResponses']) ? params['inputResponses'] : {};
    const asked: Record<string, InputRequest> = {};
    const sync: TaskRun = {
      signal,
      elicit: (key, request) => {
        const r = responses[key];
        if (isRecord(r)) return Promise.resolve(r);
        asked[key] = request;
        return new Promise(() => undefined);
      },
    };
    const ran = tool.run(args, sync);
    // A tool that asked something does not finish before its answers come: answer what it asked.
    return Promise.race([
      ran,
      new Promise<Record<string, unknown>>((resolve) =>
        setImmediate(() => {
          if (Object.keys(asked).length > 0) {
            resolve({ resultType: 'input_required', inputRequests: asked });
          }
        }),
      ),
    ]);
  }

  const TaskParams = z.looseObject({ taskId: z.string() });

  function find(taskId: string): FixtureTask {
    const t = tasks.get(taskId);
    if (!t) throw new ProtocolError(-32602, `Task not found: ${taskId}`, { taskId });
    return t;
  }

  function detailed(t: FixtureTask) {
    const base = {
      taskId: t.id,
      status: t.status,
      createdAt: t.createdAt,
      lastUpdatedAt: t.lastUpdatedAt,
      ttlMs: TTL_MS,
      pollIntervalMs: POLL_MS,
    };
    switch (t.status) {
      case 'completed':
        return { ...base, result: { ...t.result, resultType: 'complete' } };
      case 'failed':
        return { ...base, error: t.error };
      case 'input_required':
        return {
          ...base,
          inputRequests: Object.fromEntries([...t.waiting].map(([k, w]) => [k, w.request])),
        };
      case 'working':
      case 'cancelled':
        return base;
    }
  }

  return {
    call,
    register(server, capabilitiesOf) {
      const gate = (ctx: unknown) => {
        if (!declaresTasks(capabilitiesOf(ctx))) throw needsTasks();
      };
      server.setRequestHandler('tasks/get', { params: TaskParams }, (params, ctx) => {
        gate(ctx);
        return detailed(find(params.taskId));
      });
      server.setRequestHandler('tasks/update', { params: TaskParams }, (params, ctx) => {
        gate(ctx);
        const t = find(params.taskId);
        const given = (ctx as { mcpReq?: { inputResponses?: unknown } }).mcpReq?.inputResponses;
        const responses = isRecord(given) ? given : params['inputResponses'];
        if (isRecord(responses)) {
          // Keys the task does not wait for (unknown, or answered already) are ignored.
          for (const [key, value] of Object.entries(responses)) {
            const w = t.waiting.get(key);
            if (!w || !isRecord(value)) continue;
            t.waiting.delete(key);
            w.answer(value);
          }
          if (t.status === 'input_required' && t.waiting.size === 0) touch(t, 'working');
        }
        return {};
      });
      server.setRequestHandler('tasks/cancel', { params: TaskParams }, (params, ctx) => {
        gate(ctx);
        const t = find(params.taskId);
        if (t.status === 'working' || t.status === 'input_required') {
          touch(t, 'cancelled');
          t.waiting.clear();
          t.abort.abort();
        }
        return {};
      });
    },
    stop() {
      for (const t of tasks.values()) t.abort.abort();
      tasks.clear();
    },
  };
}
