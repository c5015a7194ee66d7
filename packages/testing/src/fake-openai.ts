// A scripted OpenAI-compatible server: `POST /v1/chat/completions` answers from a script of
// replies (text, tool calls, several in parallel, errors with a status code, delays), streamed
// as server-sent events when the request asks for `stream: true`, and every request is recorded
// so a test can check what the model was shown. The real `openai` SDK talks to it over HTTP (no
// LLM is reachable from here, and a mocked SDK would prove nothing about the wire). The demo
// can run on it when no API key is set.
//
// Each request takes the next step of the script. A step is a reply or a function of the
// request that returns one (for answers that depend on what the model was shown). When the
// script is empty the server answers 400 `script exhausted`, an error an agent does not retry.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { completion, sendStream, type ChatRequest } from './fake-openai-wire.ts';

export type { ChatRequest, ChatMessage } from './fake-openai-wire.ts';

export interface ScriptedToolCall {
  name: string;
  /** An object is sent as its JSON text; a string is sent as written (even if not JSON). */
  arguments: Record<string, unknown> | string;
  /** Defaults to `call_<n>`. */
  id?: string;
}

export type ScriptedReply =
  | { text: string; toolCalls?: ScriptedToolCall[]; delayMs?: number }
  | { text?: string; toolCalls: ScriptedToolCall[]; delayMs?: number }
  | {
      error: { status: number; message?: string; type?: string; retryAfterMs?: number };
      delayMs?: number;
    };

export type ScriptStep = ScriptedReply | ((req: RecordedChatRequest) => ScriptedReply);

export interface RecordedChatRequest {
  /** 0 for the first request the server got. */
  readonly index: number;
  readonly body: ChatRequest;
  readonly authorization: string | undefined;
  readonly at: Date;
}

export interface ScriptedOpenAIOptions {
  script?: ScriptStep[];
  /** Answers every request once the script is empty (instead of 400). */
  fallback?: ScriptStep;
  /** Defaults to a free port on 127.0.0.1. */
  port?: number;
}

export interface ScriptedOpenAI {
  /** `http://127.0.0.1:<port>/v1`: the SDK's `baseURL`. */
  readonly url: string;
  readonly port: number;
  /** Appends steps to the script. */
  push(...steps: ScriptStep[]): void;
  /** Every chat request received so far, oldest first. */
  requests(): RecordedChatRequest[];
  /** Steps not yet used. */
  remaining(): number;
  stop(): Promise<void>;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const c of req) chunks.push(c as Buffer);
  return Buffer.concat(chunks).toString('utf8');
}

function sendJson(res: ServerResponse, status: number, body: unknown, headers = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', ...headers });
  res.end(text);
}

function sendError(res: ServerResponse, e: Extract<ScriptedReply, { error: unknown }>['error']) {
  const headers: Record<string, string> = {};
  if (e.retryAfterMs !== undefined) headers['retry-after-ms'] = String(e.retryAfterMs);
  sendJson(
    res,
    e.status,
    {
      error: {
        message: e.message ?? `scripted error ${e.status}`,
        type: e.type ?? (e.status === 429 ? 'rate_limit_exceeded' : 'scripted_error'),
        code: null,
        param: null,
      },
    },
    headers,
  );
}

export async function startScriptedOpenAI(
  opts: ScriptedOpenAIOptions = {},
): Promise<ScriptedOpenAI> {
  const script: ScriptStep[] = [...(opts.script ?? [])];
  const recorded: RecordedChatRequest[] = [];
  let callIds = 0;
  const sockets = new Set<Socket>();

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const path = (req.url ?? '/').split('?')[0];
    if (req.method === 'GET' && path === '/v1/models') {
      sendJson(res, 200, { object: 'list', data: [{ id: 'scripted', object: 'model' }] });
      return;
    }
    if (req.method !== 'POST' || path !== '/v1/chat/completions') {
      sendJson(res, 404, { error: { message: `no route ${req.method} ${path}`, type: 'invalid' } });
      return;
    }
    let body: ChatRequest;
    try {
      body = JSON.parse(await readBody(req)) as ChatRequest;
    } catch {
      sendJson(res, 400, { error: { message: 'body is not JSON', type: 'invalid_request' } });
      return;
    }
    const rec: RecordedChatRequest = {
      index: recorded.length,
      body,
      authorization: req.headers.authorization,
      at: new Date(),
    };
    recorded.push(rec);
    const step = script.shift() ?? opts.fallback;
    if (step === undefined) {
      sendError(res, { status: 400, message: 'script exhausted', type: 'invalid_request_error' });
      return;
    }
    const reply = typeof step === 'function' ? step(rec) : step;
    if (reply.delayMs) await new Promise((r) => setTimeout(r, reply.delayMs));
    if (res.destroyed) return;
    if ('error' in reply) {
      sendError(res, reply.error);
      return;
    }
    const calls = (reply.toolCalls ?? []).map((c) => ({
      id: c.id ?? `call_${++callIds}`,
      name: c.name,
      arguments: typeof c.arguments === 'string' ? c.arguments : JSON.stringify(c.arguments),
    }));
    const model = typeof body.model === 'string' ? body.model : 'scripted';
    if (body.stream === true) {
      const usage = (body['stream_options'] as { include_usage?: unknown } | undefined)
        ?.include_usage;
      sendStream(res, model, reply.text ?? '', calls, usage === true ? body : undefined);
    } else sendJson(res, 200, completion(model, reply.text ?? null, calls));
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((err: unknown) => {
      if (!res.headersSent) sendJson(res, 500, { error: { message: String(err), type: 'bug' } });
      else res.destroy();
    });
  });
  server.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(opts.port ?? 0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address ? address.port : 0;

  return {
    url: `http://127.0.0.1:${port}/v1`,
    port,
    push: (...steps) => void script.push(...steps),
    requests: () => [...recorded],
    remaining: () => script.length,
    stop: () =>
      new Promise<void>((resolve) => {
        for (const s of sockets) s.destroy();
        server.close(() => resolve());
      }),
  };
}
