// The Chat Completions wire shapes the scripted server sends: a whole completion, or the same
// answer as `chat.completion.chunk` server-sent events ending in `data: [DONE]`, the way OpenAI
// streams (text in small deltas; each tool call opened with its id and name, its arguments
// following in pieces; the finish reason in a last chunk).
import type { ServerResponse } from 'node:http';

export interface ChatMessage {
  role: string;
  content?: unknown;
  tool_calls?: { id: string; type: string; function: { name: string; arguments: string } }[];
  tool_call_id?: string;
  name?: string;
}

export interface ChatRequest {
  model?: unknown;
  messages: ChatMessage[];
  tools?: {
    type: string;
    function: { name: string; description?: string; parameters?: unknown };
  }[];
  stream?: boolean;
  [key: string]: unknown;
}

interface Call {
  id: string;
  name: string;
  arguments: string;
}

let seq = 0;
const nextId = () => `chatcmpl-scripted-${++seq}`;
const now = () => Math.floor(Date.now() / 1000);

export function completion(model: string, text: string | null, calls: Call[]) {
  return {
    id: nextId(),
    object: 'chat.completion',
    created: now(),
    model,
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          content: text,
          refusal: null,
          ...(calls.length
            ? {
                tool_calls: calls.map((c) => ({
                  id: c.id,
                  type: 'function',
                  function: { name: c.name, arguments: c.arguments },
                })),
              }
            : {}),
        },
        logprobs: null,
        finish_reason: calls.length ? 'tool_calls' : 'stop',
      },
    ],
    usage: { prompt_tokens: 1, completion_tokens: 1, total_tokens: 2 },
  };
}

function pieces(text: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < text.length; i += size) out.push(text.slice(i, i + size));
  return out;
}

/** Token counts of the usage chunk: about four characters a token, as OpenAI's guide says. */
function usageOf(req: ChatRequest, text: string, calls: Call[]) {
  const tokens = (s: string) => Math.max(1, Math.ceil(s.length / 4));
  const prompt = tokens(JSON.stringify(req.messages));
  const completionTokens = tokens(text + calls.map((c) => c.name + c.arguments).join(''));
  return {
    prompt_tokens: prompt,
    completion_tokens: completionTokens,
    total_tokens: prompt + completionTokens,
  };
}

/**
 * Streams the answer; with `usageFor` (the request asked `stream_options.include_usage`) a last
 * chunk with no choices carries the token usage, as OpenAI sends it.
 */
export function sendStream(
  res: ServerResponse,
  model: string,
  text: string,
  calls: Call[],
  usageFor?: ChatRequest,
): void {
  const id = nextId();
  const created = now();
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    connection: 'keep-alive',
  });
  const send = (delta: Record<string, unknown>, finish: string | null = null) =>
    res.write(
      `data: ${JSON.stringify({
        id,
        object: 'chat.completion.chunk',
        created,
        model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      })}\n\n`,
    );
  send({ role: 'assistant', content: '' });
  for (const p of pieces(text, 8)) send({ content: p });
  calls.forEach((c, index) => {
    send({
      tool_calls: [
        { index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } },
      ],
    });
    for (const p of pieces(c.arguments, 16))
      send({ tool_calls: [{ index, function: { arguments: p } }] });
  });
  send({}, calls.length ? 'tool_calls' : 'stop');
  if (usageFor) {
    const usage = usageOf(usageFor, text, calls);
    res.write(
      `data: ${JSON.stringify({ id, object: 'chat.completion.chunk', created, model, choices: [], usage })}\n\n`,
    );
  }
  res.write('data: [DONE]\n\n');
  res.end();
}
