// The model, reached through any OpenAI-compatible Chat Completions endpoint with the official
// `openai` SDK. The SDK's own retries are off: 429, 5xx and lost connections are retried here,
// with exponential backoff and jitter (a longer Retry-After wins), so the attempts are logged
// and bounded by configuration. Any other answer is a ModelError: the turn ends and says why.
import { setTimeout as sleep } from 'node:timers/promises';
import OpenAI from 'openai';
import type { Logger } from 'pino';
import { backoffMs } from '@toolmesh/bus';
import { messageWithCause } from '@toolmesh/protocol';
import type { LlmConfig } from '@toolmesh/config';
import { SpanKind, metrics, withSpan } from '@toolmesh/telemetry';

export type ChatMessage = OpenAI.Chat.Completions.ChatCompletionMessageParam;
export type FunctionSpec = OpenAI.Chat.Completions.ChatCompletionFunctionTool;

export interface ModelCall {
  id: string;
  name: string;
  /** The arguments as the model wrote them (JSON text, not yet checked). */
  arguments: string;
}

export interface ModelAnswer {
  text: string;
  calls: ModelCall[];
  /** Token counts, when the endpoint reports them. */
  usage?: { input: number; output: number };
}

export interface AskOptions {
  model: string;
  messages: ChatMessage[];
  tools: FunctionSpec[];
  signal: AbortSignal;
  /** Each streamed text delta, in order (streaming only). */
  onDelta?: (delta: string) => void;
}

export interface Llm {
  ask(o: AskOptions, log: Logger): Promise<ModelAnswer>;
}

/** The endpoint refused the request, or kept failing past the retries. */
export class ModelError extends Error {
  readonly code = 'model_error';
  readonly status: number | undefined;
  constructor(message: string, status: number | undefined, cause: unknown) {
    super(message, { cause });
    this.name = 'ModelError';
    this.status = status;
  }
}

/** The SDK types these loosely; read them as what they are on the wire. */
const statusOf = (err: unknown): number | undefined =>
  err instanceof OpenAI.APIError ? (err as { status?: number }).status : undefined;
const headersOf = (err: unknown): Headers | undefined =>
  err instanceof OpenAI.APIError ? (err as { headers?: Headers }).headers : undefined;

function isRetryable(err: unknown): boolean {
  if (err instanceof OpenAI.APIConnectionError) return true;
  const s = statusOf(err);
  return s === 429 || s === 408 || (s !== undefined && s >= 500);
}

function retryAfterMs(err: unknown): number {
  const headers = headersOf(err);
  if (!headers) return 0;
  const ms = Number(headers.get('retry-after-ms'));
  if (Number.isFinite(ms) && ms > 0) return ms;
  const sec = Number(headers.get('retry-after'));
  return Number.isFinite(sec) && sec > 0 ? sec * 1000 : 0;
}

/** Where model requests go, without any user:password the base URL may carry. */
function endpointOf(baseUrl: string): string {
  try {
    const u = new URL(baseUrl);
    u.username = '';
    u.password = '';
    return `${u.toString().replace(/\/+$/, '')}/chat/completions`;
  } catch {
    return baseUrl;
  }
}

/** A URL's user:password, wherever a cause quotes one (fetch refuses such a URL, quoting it). */
const withoutUserinfo = (text: string) => text.replace(/\/\/[^/@\s]*@/g, '//');

/** What went wrong, with the URL the request went to and the cause a connection failed with. */
function describe(err: unknown, endpoint: string): { message: string; status: number | undefined } {
  if (err instanceof OpenAI.APIConnectionError) {
    // "Connection error." alone: the cause says ENOTFOUND, ECONNREFUSED or what TLS refused.
    return {
      message: `cannot reach the model endpoint ${endpoint}: ${withoutUserinfo(messageWithCause(err))}`,
      status: undefined,
    };
  }
  if (err instanceof OpenAI.APIError) {
    const status = statusOf(err);
    return {
      message: `model endpoint ${endpoint} answered ${status ?? '?'}: ${err.message}`,
      status,
    };
  }
  return {
    message: `model request to ${endpoint} failed: ${withoutUserinfo(messageWithCause(err))}`,
    status: undefined,
  };
}

function usageOf(
  u: { prompt_tokens: number; completion_tokens: number } | null | undefined,
): Pick<ModelAnswer, 'usage'> {
  return u ? { usage: { input: u.prompt_tokens, output: u.completion_tokens } } : {};
}

/** One model request: a span, its latency and its tokens by model. */
async function observed(model: string, fn: () => Promise<ModelAnswer>): Promise<ModelAnswer> {
  const started = performance.now();
  let outcome = 'error';
  try {
    return await withSpan(
      'model request',
      { kind: SpanKind.CLIENT, attributes: { 'gen_ai.request.model': model } },
      async (span) => {
        const answer = await fn();
        outcome = 'ok';
        if (answer.usage) {
          span.setAttribute('gen_ai.usage.input_tokens', answer.usage.input);
          span.setAttribute('gen_ai.usage.output_tokens', answer.usage.output);
          metrics.modelTokens.inc({ model, kind: 'input' }, answer.usage.input);
          metrics.modelTokens.inc({ model, kind: 'output' }, answer.usage.output);
        }
        return answer;
      },
    );
  } finally {
    metrics.modelRequestDuration.observe({ model, outcome }, (performance.now() - started) / 1000);
  }
}

export function createLlm(config: LlmConfig): Llm {
  const endpoint = endpointOf(config.base_url);
  const client = new OpenAI({
    baseURL: config.base_url,
    // Local servers (Ollama, vLLM) take any key; the SDK insists on one.
    apiKey: config.api_key || 'unset',
    maxRetries: 0,
    timeout: config.request_timeout_ms,
  });

  async function once(o: AskOptions): Promise<ModelAnswer> {
    const body = {
      model: o.model,
      messages: o.messages,
      ...(o.tools.length ? { tools: o.tools } : {}),
    };
    if (!config.stream) {
      const r = await client.chat.completions.create(body, { signal: o.signal });
      const m = r.choices[0]?.message;
      return {
        ...usageOf(r.usage),
        text: m?.content ?? '',
        calls: (m?.tool_calls ?? []).flatMap((c) =>
          c.type === 'function'
            ? [{ id: c.id, name: c.function.name, arguments: c.function.arguments }]
            : [],
        ),
      };
    }
    const stream = await client.chat.completions.create(
      { ...body, stream: true, stream_options: { include_usage: true } },
      { signal: o.signal },
    );
    let text = '';
    const calls: ModelCall[] = [];
    let usage: Pick<ModelAnswer, 'usage'> = {};
    for await (const chunk of stream) {
      if (chunk.usage) usage = usageOf(chunk.usage);
      const delta = chunk.choices[0]?.delta;
      if (!delta) continue;
      if (delta.content) {
        text += delta.content;
        o.onDelta?.(delta.content);
      }
      // Tool calls arrive in pieces keyed by index: the first names the call, later ones append
      // to its arguments.
      for (const t of delta.tool_calls ?? []) {
        const slot = (calls[t.index] ??= { id: '', name: '', arguments: '' });
        if (t.id) slot.id = t.id;
        if (t.function?.name) slot.name += t.function.name;
        if (t.function?.arguments) slot.arguments += t.function.arguments;
      }
    }
    return { ...usage, text, calls: calls.filter((c) => c !== undefined) };
  }

  return {
    ask: async (o, log) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await observed(o.model, () => once(o));
        } catch (err) {
          if (o.signal.aborted) throw err;
          const { message, status } = describe(err, endpoint);
          if (!isRetryable(err) || attempt > config.max_retries) {
            const tries = attempt > 1 ? ` (after ${attempt} attempts)` : '';
            throw new ModelError(`${message}${tries}`, status, err);
          }
          const delayMs = Math.min(
            config.retry_max_ms,
            Math.max(
              backoffMs(attempt, config.retry_base_ms, config.retry_max_ms),
              retryAfterMs(err),
            ),
          );
          log.warn({ status, attempt, delayMs, err: message }, 'model request failed; retrying');
          await sleep(delayMs, undefined, { signal: o.signal });
        }
      }
    },
  };
}
