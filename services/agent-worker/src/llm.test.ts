// The model client against the scripted server (the real SDK over HTTP): both wire modes, the
// retries of 429/5xx, and the errors that end a turn.
import { pino } from 'pino';
import { afterEach, describe, expect, it } from 'vitest';
import { configSchema } from '@toolmesh/config';
import { freePort, startScriptedOpenAI, type ScriptedOpenAI } from '@toolmesh/testing';
import { ModelError, createLlm, type AskOptions } from './llm.ts';

let server: ScriptedOpenAI | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const log = pino({ level: 'silent' });
const llmOf = (s: ScriptedOpenAI, over: Record<string, unknown> = {}) =>
  createLlm(
    configSchema.parse({
      llm: { base_url: s.url, api_key: 'k', retry_base_ms: 10, retry_max_ms: 50, ...over },
    }).llm,
  );
const ask = (extra: Partial<AskOptions> = {}): AskOptions => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hi' }],
  tools: [],
  signal: new AbortController().signal,
  ...extra,
});

describe('the model client', () => {
  it.each([true, false])('reads text and parallel calls (stream %s)', async (stream) => {
    server = await startScriptedOpenAI({
      script: [
        {
          text: 'two calls',
          toolCalls: [
            { name: 'a__b', arguments: { x: 1 }, id: 'c1' },
            { name: 'a__c', arguments: 'not json', id: 'c2' },
          ],
        },
      ],
    });
    const deltas: string[] = [];
    const answer = await llmOf(server, { stream }).ask(
      ask({ onDelta: (d) => deltas.push(d) }),
      log,
    );
    expect(answer).toEqual({
      text: 'two calls',
      calls: [
        { id: 'c1', name: 'a__b', arguments: '{"x":1}' },
        { id: 'c2', name: 'a__c', arguments: 'not json' },
      ],
      // Streamed, the usage comes in a last chunk the client asks for (stream_options).
      usage: stream
        ? { input: expect.any(Number), output: expect.any(Number) }
        : { input: 1, output: 1 },
    });
    expect(answer.usage!.input).toBeGreaterThan(0);
    expect(answer.usage!.output).toBeGreaterThan(0);
    expect(deltas.join('')).toBe(stream ? 'two calls' : '');
    expect(server.requests()[0]?.body.stream).toBe(stream ? true : undefined);
  });

  it('retries 429 and 5xx, then answers', async () => {
    server = await startScriptedOpenAI({
      script: [{ error: { status: 429 } }, { error: { status: 502 } }, { text: 'ok' }],
    });
    expect((await llmOf(server).ask(ask(), log)).text).toBe('ok');
    expect(server.requests()).toHaveLength(3);
  });

  it('gives up after max_retries with a ModelError naming the status', async () => {
    server = await startScriptedOpenAI({ fallback: { error: { status: 503, message: 'down' } } });
    const err = await llmOf(server, { max_retries: 2 })
      .ask(ask(), log)
      .catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ModelError);
    expect((err as ModelError).status).toBe(503);
    expect((err as Error).message).toMatch(/503.*after 3 attempts/);
    expect(server.requests()).toHaveLength(3);
  });

  it('does not retry a 400 or a 401', async () => {
    server = await startScriptedOpenAI({
      script: [{ error: { status: 401, message: 'bad key' } }, { text: 'unreached' }],
    });
    await expect(llmOf(server).ask(ask(), log)).rejects.toMatchObject({
      code: 'model_error',
      status: 401,
    });
    expect(server.requests()).toHaveLength(1);
  });

  it('says which URL it asked: the status it answered, or why it could not be reached', async () => {
    server = await startScriptedOpenAI({
      fallback: { error: { status: 404, message: 'no route' } },
    });
    const answered = await llmOf(server, { max_retries: 0 })
      .ask(ask(), log)
      .catch((e: unknown) => e);
    expect((answered as Error).message).toContain(
      `model endpoint ${server.url}/chat/completions answered 404`,
    );
    // Nothing listens there: the cause, not just "Connection error.".
    const port = await freePort();
    const llmAt = (base: string) =>
      createLlm(configSchema.parse({ llm: { base_url: base, api_key: 'k', max_retries: 0 } }).llm);
    const unreachable = await llmAt(`http://127.0.0.1:${port}/v1`)
      .ask(ask(), log)
      .catch((e: unknown) => e);
    expect(unreachable).toBeInstanceOf(ModelError);
    const message = (unreachable as Error).message;
    expect(message).toContain(
      `cannot reach the model endpoint http://127.0.0.1:${port}/v1/chat/completions`,
    );
    expect(message).toContain('ECONNREFUSED');
    // A password in the base URL is not repeated in the message (it ends up in a card).
    const withPassword = await llmAt(`http://user:s3cret-pw@127.0.0.1:${port}/v1`)
      .ask(ask(), log)
      .catch((e: unknown) => e);
    expect((withPassword as Error).message).toContain(`http://127.0.0.1:${port}/v1`);
    expect((withPassword as Error).message).not.toContain('s3cret-pw');
  });
});
