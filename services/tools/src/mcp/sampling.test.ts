// The sampler speaks the Chat Completions wire of [llm] (a scripted fake server stands in for
// the model): an MCP sampling request becomes one chat request, its answer a CreateMessageResult;
// what it cannot carry (images, audio) is refused rather than dropped, and an endpoint error is a
// model_error.
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '@toolmesh/config';
import { startScriptedOpenAI, type ScriptedOpenAI } from '@toolmesh/testing';
import { createSampler } from './sampling.ts';

let server: ScriptedOpenAI | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const samplerFor = (s: ScriptedOpenAI) =>
  createSampler(
    loadConfig({
      env: { CG__LLM__BASE_URL: s.url, CG__LLM__API_KEY: 'sk-x', CG__LLM__MODEL: 'm-1' },
    }).llm,
  );

describe('createSampler', () => {
  it('sends the system prompt and the messages, and answers with the text', async () => {
    server = await startScriptedOpenAI({ script: [{ text: 'four' }] });
    const out = await samplerFor(server).createMessage(
      {
        systemPrompt: 'be brief',
        messages: [
          { role: 'user', content: { type: 'text', text: 'two and two?' } },
          { role: 'assistant', content: [{ type: 'text', text: 'thinking' }] },
          { role: 'user', content: { type: 'text', text: 'well?' } },
        ],
        maxTokens: 20,
        temperature: 0.5,
      },
      AbortSignal.timeout(30_000),
    );
    expect(out).toMatchObject({
      role: 'assistant',
      content: { type: 'text', text: 'four' },
      stopReason: 'endTurn',
    });
    expect(server.requests()[0]?.body).toMatchObject({
      model: 'm-1',
      max_tokens: 20,
      temperature: 0.5,
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'two and two?' },
        { role: 'assistant', content: 'thinking' },
        { role: 'user', content: 'well?' },
      ],
    });
  });

  it('refuses an image instead of dropping it, without asking the model', async () => {
    server = await startScriptedOpenAI({ script: [{ text: 'never' }] });
    await expect(
      samplerFor(server).createMessage(
        {
          messages: [
            { role: 'user', content: { type: 'image', data: 'AA==', mimeType: 'image/png' } },
          ],
        },
        AbortSignal.timeout(30_000),
      ),
    ).rejects.toMatchObject({ code: 'invalid_sampling' });
    expect(server.requests()).toHaveLength(0);
  });

  it("an endpoint's error status is a model_error", async () => {
    server = await startScriptedOpenAI({ script: [{ error: { status: 503 } }] });
    await expect(
      samplerFor(server).createMessage(
        { messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }] },
        AbortSignal.timeout(30_000),
      ),
    ).rejects.toMatchObject({ code: 'model_error', message: 'the model endpoint answered 503' });
  });
});
