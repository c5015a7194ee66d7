// The scripted server speaks the wire the real `openai` SDK expects: whole completions, streamed
// chunks with parallel tool calls, and errors the SDK maps to its typed errors.
import OpenAI from 'openai';
import { afterEach, describe, expect, it } from 'vitest';
import { demoModelReply } from './fake-openai-demo.ts';
import { startScriptedOpenAI, type ScriptedOpenAI } from './fake-openai.ts';

let server: ScriptedOpenAI | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

const sdk = (s: ScriptedOpenAI) => new OpenAI({ baseURL: s.url, apiKey: 'sk-test', maxRetries: 0 });

describe('startScriptedOpenAI', () => {
  it('answers text and records what the model was shown', async () => {
    server = await startScriptedOpenAI({ script: [{ text: 'hello there' }] });
    const r = await sdk(server).chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'hi' }],
    });
    expect(r.choices[0]?.message.content).toBe('hello there');
    expect(r.choices[0]?.finish_reason).toBe('stop');
    const [req] = server.requests();
    expect(req?.body.messages).toEqual([{ role: 'user', content: 'hi' }]);
    expect(req?.authorization).toBe('Bearer sk-test');
    expect(server.remaining()).toBe(0);
  });

  it('streams text and several tool calls in one answer', async () => {
    server = await startScriptedOpenAI({
      script: [
        {
          text: 'calling two tools now',
          toolCalls: [
            { name: 'a__one', arguments: { x: 1, long: 'y'.repeat(40) } },
            { name: 'b__two', arguments: { z: true }, id: 'call_fixed' },
          ],
        },
      ],
    });
    const stream = await sdk(server).chat.completions.create({
      model: 'm1',
      messages: [{ role: 'user', content: 'go' }],
      stream: true,
    });
    let text = '';
    const calls: { id?: string; name?: string; args: string }[] = [];
    let finish: string | null = null;
    let chunks = 0;
    for await (const chunk of stream) {
      chunks++;
      const c = chunk.choices[0];
      text += c?.delta.content ?? '';
      for (const t of c?.delta.tool_calls ?? []) {
        const slot = (calls[t.index] ??= { args: '' });
        if (t.id) slot.id = t.id;
        if (t.function?.name) slot.name = t.function.name;
        slot.args += t.function?.arguments ?? '';
      }
      finish = c?.finish_reason ?? finish;
    }
    expect(chunks).toBeGreaterThan(4);
    expect(text).toBe('calling two tools now');
    expect(finish).toBe('tool_calls');
    expect(calls.map((c) => [c.name, JSON.parse(c.args) as unknown])).toEqual([
      ['a__one', { x: 1, long: 'y'.repeat(40) }],
      ['b__two', { z: true }],
    ]);
    expect(calls[1]?.id).toBe('call_fixed');
    expect(server.requests()[0]?.body.stream).toBe(true);
  });

  it('answers scripted errors with their status, then the next step', async () => {
    server = await startScriptedOpenAI({
      script: [{ error: { status: 429 } }, { error: { status: 503 } }, { text: 'ok' }],
    });
    const client = sdk(server);
    const ask = () =>
      client.chat.completions.create({ model: 'm', messages: [{ role: 'user', content: 'q' }] });
    await expect(ask()).rejects.toBeInstanceOf(OpenAI.RateLimitError);
    await expect(ask()).rejects.toMatchObject({ status: 503 });
    expect((await ask()).choices[0]?.message.content).toBe('ok');
    await expect(ask()).rejects.toMatchObject({ status: 400 });
    expect(server.requests()).toHaveLength(4);
  });

  it('lets a step depend on the request', async () => {
    server = await startScriptedOpenAI({
      fallback: (req) => ({ text: `you said ${String(req.body.messages.at(-1)?.content)}` }),
    });
    const r = await sdk(server).chat.completions.create({
      model: 'm',
      messages: [{ role: 'user', content: 'ping' }],
    });
    expect(r.choices[0]?.message.content).toBe('you said ping');
  });

  it('the demo model draws the request with the image skill, then submits the artifact', async () => {
    server = await startScriptedOpenAI({ fallback: demoModelReply });
    const client = sdk(server);
    const tools = ['skills__run_cmd', 'submit_result'].map((name) => ({
      type: 'function' as const,
      function: { name, parameters: { type: 'object' } },
    }));
    const user = { role: 'user' as const, content: "Draw 'a cat'; rm -rf /" };
    const first = await client.chat.completions.create({ model: 'm', messages: [user], tools });
    const call = first.choices[0]!.message.tool_calls![0]!;
    if (call.type !== 'function') throw new Error('expected a function call');
    const args = JSON.parse(call.function.arguments) as { command: string; skill: string };
    expect(args.skill).toBe('draw-image');
    expect(args.command).toBe("python3 draw.py --out out/picture.png --caption 'Draw a cat rm rf'");
    const second = await client.chat.completions.create({
      model: 'm',
      tools,
      messages: [
        user,
        { role: 'assistant', content: null, tool_calls: [call] },
        {
          role: 'tool',
          tool_call_id: call.id,
          content: JSON.stringify({ status: 'succeeded', result: { artifacts: [{ id: 'a1' }] } }),
        },
      ],
    });
    const submit = second.choices[0]!.message.tool_calls![0]!;
    if (submit.type !== 'function') throw new Error('expected a function call');
    expect(submit.function.name).toBe('submit_result');
    expect(JSON.parse(submit.function.arguments)).toMatchObject({
      result: { artifacts: [{ id: 'a1' }] },
    });
  });
});
