import { describe, expect, it } from 'vitest';
import type { Card, ThreadTurn } from '@toolmesh/store';
import { estimateTokens, fitHistory, historyNote, turnMessages } from './history.ts';
import type { ChatMessage } from './llm.ts';

let n = 0;
const card = (kind: Card['kind'], content: unknown, toolCallId: string | null = null): Card => ({
  card_id: `c${++n}`,
  project_id: 'p',
  kind,
  tool_call_id: toolCallId,
  author: 'x',
  content,
  metadata: {},
  created_at: new Date(),
});

function turn(seq: number, over: Partial<ThreadTurn> = {}): ThreadTurn {
  return {
    task_id: `t${seq}`,
    seq,
    input: `message ${seq}`,
    status: 'succeeded',
    error: null,
    created_at: new Date(),
    updated_at: new Date(),
    turn: { turn_id: `u${seq}`, status: 'succeeded', step: 0 },
    final: card('final', { status: 'succeeded', result: `answer ${seq}` }),
    conversation: {
      cards: [card('message', { role: 'user', content: `message ${seq}` })],
      calls: [],
      results: new Map(),
    },
    ...over,
  };
}

/** A turn of `words` words of text: a known size for the budget. */
const sized = (seq: number, words: number): ChatMessage[] => [
  { role: 'user', content: `message ${seq} ${'word '.repeat(words)}` },
  { role: 'assistant', content: `answer ${seq}` },
];

describe('a thread turn as messages', () => {
  it('shows the message, the calls with their results, and the final answer', () => {
    const t = turn(1, {
      conversation: {
        cards: [
          card('message', { role: 'user', content: 'echo hi' }),
          card('message', {
            role: 'assistant',
            content: 'calling',
            tool_calls: [{ id: 'k1', name: 'builtin__echo', arguments: '{"x":"hi"}' }],
          }),
        ],
        calls: [],
        results: new Map([
          ['k1', card('tool.result', { status: 'succeeded', result: { x: 'hi' } }, 'k1')],
        ]),
      },
      final: card('final', { status: 'succeeded', result: { said: 'hi' } }),
    });
    expect(turnMessages(t, 1000)).toEqual([
      { role: 'user', content: 'echo hi' },
      {
        role: 'assistant',
        content: 'calling',
        tool_calls: [
          {
            id: 'k1',
            type: 'function',
            function: { name: 'builtin__echo', arguments: '{"x":"hi"}' },
          },
        ],
      },
      { role: 'tool', tool_call_id: 'k1', content: '{"status":"succeeded","result":{"x":"hi"}}' },
      { role: 'assistant', content: '{"said":"hi"}' },
    ]);
  });

  it('says how a turn failed, and shows a message canceled before its turn began', () => {
    const failed = turn(2, {
      status: 'failed',
      final: card('final', {
        status: 'failed',
        error: { code: 'step_limit', message: 'too long' },
      }),
    });
    expect(turnMessages(failed, 1000).at(-1)).toEqual({
      role: 'assistant',
      content: '[this turn ended failed: too long]',
    });
    const canceled = turn(3, {
      status: 'canceled',
      turn: null,
      conversation: { cards: [], calls: [], results: new Map() },
      final: card('final', { status: 'canceled', error: { code: 'canceled', message: 'stop' } }),
    });
    expect(turnMessages(canceled, 1000)).toEqual([
      { role: 'user', content: 'message 3' },
      { role: 'assistant', content: '[this turn ended canceled: stop]' },
    ]);
  });
});

describe('the history budget', () => {
  it('keeps every turn whole when they fit, with no note', () => {
    const turns = [sized(1, 10), sized(2, 10), sized(3, 10)];
    const h = fitHistory(turns, 3, 10_000, true);
    expect(h.messages).toEqual(turns.flat());
    expect(h.leftOut).toBe(0);
    expect(historyNote(h, 10_000)).toBeUndefined();
  });

  it('drops the oldest turns after the first, keeping the first message and the newest turns', () => {
    const turns = [sized(1, 100), sized(2, 100), sized(3, 100), sized(4, 100), sized(5, 100)];
    const one = estimateTokens(turns[4]!);
    const input = estimateTokens(turns[0]!.slice(0, 1));
    // Room for the first message and two whole turns, not three.
    const budget = input + 2 * one + Math.floor(one / 2);
    const h = fitHistory(turns, 5, budget, true);
    expect(h.messages).toEqual([turns[0]![0], ...turns[3]!, ...turns[4]!]);
    expect(h.tokens).toBeLessThanOrEqual(budget);
    expect(h.leftOut).toBe(2);
    expect(h.firstInputOnly).toBe(true);
    expect(historyNote(h, budget)).toBe(
      `[2 of the 5 earlier turns of this conversation are left out to keep it within ${budget} tokens; of the first turn only its message is kept.]`,
    );
  });

  it('drops everything when not even the first message fits', () => {
    const turns = [sized(1, 400), sized(2, 400)];
    const h = fitHistory(turns, 2, 50, true);
    expect(h.messages).toEqual([]);
    expect(h.leftOut).toBe(2);
  });

  it('counts turns that were never read as left out', () => {
    // The first and the newest of 300 earlier turns were read.
    const turns = [sized(1, 1), sized(299, 1), sized(300, 1)];
    const h = fitHistory(turns, 300, 10_000, true);
    expect(h.messages).toEqual([turns[0]![0], ...turns[1]!, ...turns[2]!]);
    expect(h.leftOut).toBe(297);
    expect(h.firstInputOnly).toBe(true);
  });
});
