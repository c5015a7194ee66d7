// Answers an MCP server's sampling/createMessage with the deployment's model ([llm]: any
// OpenAI-compatible Chat Completions endpoint), for a call no MCP client can answer it for and
// whose project allows it (ask.ts decides). Text messages only: an image or audio block is
// refused (invalid_sampling) rather than dropped. One request, no streaming, no retries: the
// server's own request has its deadline, and it may ask again.
import type { LlmConfig } from '@toolmesh/config';

export interface Sampler {
  /** The CreateMessageResult for the server; throws an error with `code`. */
  createMessage(
    params: Record<string, unknown>,
    signal: AbortSignal,
  ): Promise<Record<string, unknown>>;
}

export class SamplingError extends Error {
  readonly code: 'invalid_sampling' | 'model_error';
  constructor(code: 'invalid_sampling' | 'model_error', message: string, cause?: unknown) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'SamplingError';
    this.code = code;
  }
}

interface ChatMessage {
  role: 'system' | 'user' | 'assistant';
  content: string;
}

/** The text of one MCP message's content (a block, or a list of blocks). */
function textOf(content: unknown): string {
  const blocks = Array.isArray(content) ? content : [content];
  return blocks
    .map((b) => {
      const block = b as { type?: unknown; text?: unknown };
      if (block.type !== 'text' || typeof block.text !== 'string') {
        throw new SamplingError(
          'invalid_sampling',
          `only text content can be sampled by the mesh's model, not ${String(block.type)}`,
        );
      }
      return block.text;
    })
    .join('\n');
}

export function toChatMessages(params: Record<string, unknown>): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = params['systemPrompt'];
  if (typeof system === 'string' && system !== '') out.push({ role: 'system', content: system });
  const messages = params['messages'];
  if (!Array.isArray(messages) || messages.length === 0) {
    throw new SamplingError('invalid_sampling', 'sampling/createMessage has no messages');
  }
  for (const m of messages as { role?: unknown; content?: unknown }[]) {
    if (m.role !== 'user' && m.role !== 'assistant') {
      throw new SamplingError('invalid_sampling', `unknown message role ${String(m.role)}`);
    }
    out.push({ role: m.role, content: textOf(m.content) });
  }
  return out;
}

export function createSampler(llm: LlmConfig): Sampler {
  const url = `${llm.base_url.replace(/\/+$/, '')}/chat/completions`;
  return {
    async createMessage(params, signal) {
      const messages = toChatMessages(params);
      const maxTokens = params['maxTokens'];
      const temperature = params['temperature'];
      const stop = params['stopSequences'];
      const body = {
        model: llm.model,
        messages,
        stream: false,
        ...(typeof maxTokens === 'number' ? { max_tokens: maxTokens } : {}),
        ...(typeof temperature === 'number' ? { temperature } : {}),
        ...(Array.isArray(stop) && stop.length > 0 ? { stop } : {}),
      };
      let res: Response;
      try {
        res = await fetch(url, {
          method: 'POST',
          headers: {
            'content-type': 'application/json',
            authorization: `Bearer ${llm.api_key || 'none'}`,
          },
          body: JSON.stringify(body),
          signal: AbortSignal.any([signal, AbortSignal.timeout(llm.request_timeout_ms)]),
        });
      } catch (err) {
        throw new SamplingError('model_error', `the model endpoint could not be reached`, err);
      }
      if (!res.ok) {
        await res.body?.cancel();
        throw new SamplingError('model_error', `the model endpoint answered ${res.status}`);
      }
      const answer = (await res.json()) as {
        model?: string;
        choices?: { message?: { content?: string | null }; finish_reason?: string }[];
      };
      const choice = answer.choices?.[0];
      const text = choice?.message?.content;
      if (typeof text !== 'string') {
        throw new SamplingError('model_error', 'the model answered no text');
      }
      return {
        role: 'assistant',
        content: { type: 'text', text },
        model: answer.model ?? llm.model,
        stopReason: choice?.finish_reason === 'length' ? 'maxTokens' : 'endTurn',
      };
    },
  };
}
