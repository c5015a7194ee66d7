// A scripted "model" for the demo when no LLM key is set: given the tools it is shown, it draws
// the user's request with the example draw-image skill through skills.run_cmd, then submits
// the picture's artifact; without that tool it answers in text. It decides from the request
// alone (the conversation it is shown), so any number of turns can share one server.
import type { RecordedChatRequest, ScriptedReply } from './fake-openai.ts';

const RUN_CMD = 'skills__run_cmd';
const SUBMIT = 'submit_result';

/** Letters, digits and spaces of the user's words, at most 40: safe inside single quotes. */
function caption(text: string): string {
  return (
    text
      .replace(/[^A-Za-z0-9 ]+/g, ' ')
      .replace(/\s+/g, ' ')
      .trim()
      .slice(0, 40) || 'hello'
  );
}

export function demoModelReply(req: RecordedChatRequest): ScriptedReply {
  const messages = req.body.messages;
  const tools = new Set((req.body.tools ?? []).map((t) => t.function.name));
  const user = messages.find((m) => m.role === 'user');
  const ask = typeof user?.content === 'string' ? user.content : 'hello';
  const toolResult = [...messages].reverse().find((m) => m.role === 'tool');
  if (toolResult) {
    let seen: unknown;
    try {
      seen = JSON.parse(String(toolResult.content));
    } catch {
      seen = toolResult.content;
    }
    const result = seen as { result?: { artifacts?: unknown[] } };
    const answer = { request: ask, artifacts: result.result?.artifacts ?? [], tool_result: seen };
    return tools.has(SUBMIT)
      ? { toolCalls: [{ name: SUBMIT, arguments: { result: answer } }] }
      : { text: JSON.stringify(answer) };
  }
  if (tools.has(RUN_CMD)) {
    return {
      text: 'Drawing it with the draw-image skill.',
      toolCalls: [
        {
          name: RUN_CMD,
          arguments: {
            skill: 'draw-image',
            command: `python3 draw.py --out out/picture.png --caption '${caption(ask)}'`,
            outputs: ['out/picture.png'],
          },
        },
      ],
    };
  }
  return { text: `(scripted model, no tools) You asked: ${ask}` };
}
