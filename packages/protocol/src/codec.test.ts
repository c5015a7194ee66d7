import { describe, expect, it } from 'vitest';
import { decodeMessage, encodeMessage, parseJson, validateMessage } from './codec.ts';
import { ProtocolError } from './errors.ts';
import { Catalog, type Message, type MessageType } from './messages.ts';

const enc = (text: string): Uint8Array => new TextEncoder().encode(text);
const json = (value: unknown): Uint8Array => enc(JSON.stringify(value));

function protocolError(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }
  throw new Error('expected a ProtocolError, nothing was thrown');
}

/** One valid example per message type; a type added to the catalog without one fails to compile. */
const examples: { [T in MessageType]: Message<T> } = {
  tool_call: {
    v: 1,
    tool_call_id: 'call_01HZX',
    tool_name: 'skills.run_cmd',
    arguments: { cmd: 'ls -la', env: { A: '1' }, retries: 2 },
    after_execution: 'terminate',
    timeout_ms: 30_000,
  },
  tool_result: {
    v: 1,
    tool_call_id: 'call_01HZX',
    tool_name: 'skills.run_cmd',
    status: 'failed',
    card_id: '0b7f7f2e-3c47-4b8e-9a55-6f3c1d2e4a10',
    created_at: '2025-01-02T03:04:05.678+00:00',
    content: {
      status: 'failed',
      error: { code: 'tool_error', message: 'exit code 2', details: { exit_code: 2 } },
      duration_ms: 12.5,
    },
  },
  wakeup: {
    v: 1,
    agent_id: 'agent-7',
    reason: 'tool_result',
    correlation_id: 'call_01HZX',
    turn_id: 't1',
    turn_epoch: 3,
  },
  cancel: { v: 1, tool_call_id: 'call_01HZX', reason: 'user pressed stop' },
  task_cancel: { v: 1, task_id: '0b7f7f2e-3c47-4b8e-9a55-6f3c1d2e4a10', reason: 'stop' },
  tool_progress: {
    v: 1,
    tool_call_id: 'call_01HZX',
    tool_name: 'skills.task_watch',
    at: '2025-01-02T03:04:05.678+00:00',
    detail: { task_id: '0b7f7f2e-3c47-4b8e-9a55-6f3c1d2e4a10', status: 'running' },
  },
  agent_task: {
    v: 1,
    agent_id: 'agent-7',
    task_id: 'task-1',
    status: 'succeeded',
    card_id: '0b7f7f2e-3c47-4b8e-9a55-6f3c1d2e4a10',
  },
  agent_step: {
    v: 1,
    agent_id: 'agent-7',
    turn_id: 't1',
    turn_epoch: 0,
    step: 4,
    tool_call_ids: ['c1', 'c2'],
  },
  agent_state: { v: 1, agent_id: 'agent-7', state: 'waiting', turn_id: 't1' },
  agent_chunk: { v: 1, agent_id: 'agent-7', turn_id: 't1', seq: 17, delta: 'Hello, wörld ✓' },
  mcp_refresh: { v: 1 },
  mcp_refresh_reply: {
    v: 1,
    ok: true,
    state: 'connected',
    tool_count: 2,
    added: ['docs.search'],
    updated: [],
    disabled: ['docs.old'],
    refused: [{ tool: 'a.b', reason: 'maps to a_b, which another tool of the server has' }],
  },
  registry_changed: { v: 1, change: 'updated', tools: ['web.search'] },
  key_revoked: { v: 1, key_id: '0190a5c2-7b1e-7c3d-9f00-1234567890ab' },
  mcp_rpc: { v: 1, method: 'resources/read', params: { uri: 'test://static-text' } },
  mcp_rpc_reply: { v: 1, error: { code: -32602, message: 'Resource not found' } },
  mcp_ask: { v: 1, method: 'elicitation/create', params: { message: 'Your name?' } },
  mcp_input_answered: { v: 1 },
  mcp_notice: {
    v: 1,
    method: 'notifications/resources/updated',
    params: { uri: 'test://watched-resource' },
  },
};
const types = Object.keys(Catalog) as MessageType[];

describe('the catalog', () => {
  it('has an example for every message type', () => {
    expect(Object.keys(examples).sort()).toEqual([...types].sort());
  });

  it.each(types)('%s: the example encodes and decodes to itself', (type) => {
    const bytes = encodeMessage(type, examples[type]);
    expect(JSON.parse(new TextDecoder().decode(bytes))).toEqual(examples[type]);
    expect(decodeMessage(type, bytes)).toEqual(examples[type]);
  });

  it.each(types)('%s: an unknown field is rejected as invalid_message, both ways', (type) => {
    const withExtra = { ...examples[type], surprise: true };
    for (const err of [
      protocolError(() => decodeMessage(type, json(withExtra))),
      protocolError(() => encodeMessage(type, withExtra as never)),
    ]) {
      expect(err.code).toBe('invalid_message');
      expect(err.message).toContain('surprise');
    }
  });

  it.each(types)('%s: version 2 is unsupported_version', (type) => {
    const err = protocolError(() => decodeMessage(type, json({ ...examples[type], v: 2 })));
    expect(err.code).toBe('unsupported_version');
    expect(err.message).toContain('2');
  });
});

describe('tool calls', () => {
  const minimal = { v: 1, tool_call_id: 'c1', tool_name: 'skills.run_cmd', arguments: {} } as const;

  it('default after_execution to suspend when encoding and when decoding', () => {
    expect(JSON.parse(new TextDecoder().decode(encodeMessage('tool_call', minimal)))).toEqual({
      ...minimal,
      after_execution: 'suspend',
    });
    expect(decodeMessage('tool_call', json(minimal)).after_execution).toBe('suspend');
    expect(decodeMessage('tool_call', json(minimal)).timeout_ms).toBeUndefined();
  });

  it('keep an explicit after_execution and timeout', () => {
    const call = decodeMessage(
      'tool_call',
      json({ ...minimal, after_execution: 'terminate', timeout_ms: 5 }),
    );
    expect([call.after_execution, call.timeout_ms]).toEqual(['terminate', 5]);
  });

  it.each([
    ['a missing tool_call_id', { ...minimal, tool_call_id: undefined }, 'tool_call_id'],
    ['a tool_call_id with a dot', { ...minimal, tool_call_id: 'a.b' }, 'tool_call_id'],
    [
      'a tool_call_id of 129 characters',
      { ...minimal, tool_call_id: 'x'.repeat(129) },
      'tool_call_id',
    ],
    ['a tool name without a target', { ...minimal, tool_name: 'run_cmd' }, 'tool_name'],
    ['a tool name with a wildcard', { ...minimal, tool_name: 'skills.*' }, 'tool_name'],
    ['arguments that are an array', { ...minimal, arguments: [1, 2] }, 'arguments'],
    ['missing arguments', { ...minimal, arguments: undefined }, 'arguments'],
    ['an unknown after_execution', { ...minimal, after_execution: 'sleep' }, 'after_execution'],
    ['a zero timeout', { ...minimal, timeout_ms: 0 }, 'timeout_ms'],
    ['a fractional timeout', { ...minimal, timeout_ms: 1.5 }, 'timeout_ms'],
    ['a missing version', { ...minimal, v: undefined }, 'v'],
  ])('with %s are invalid_message naming the field', (_what, body, field) => {
    const err = protocolError(() => decodeMessage('tool_call', json(body)));
    expect(err.code).toBe('invalid_message');
    expect(err.message).toContain(`${field}:`);
    const issues = err.details?.['issues'] as Array<{ path: string }>;
    expect(issues.map((i) => i.path)).toContain(field);
  });

  it('that are not JSON objects are invalid_message', () => {
    for (const text of ['null', '[]', '"call"', '42', 'true']) {
      expect(protocolError(() => decodeMessage('tool_call', enc(text))).code).toBe(
        'invalid_message',
      );
    }
  });

  it('accept nested arguments of any JSON shape', () => {
    const args = { list: [1, 'two', null, { deep: [true] }], text: 'ünïcødé 🚀', n: -0.5 };
    expect(decodeMessage('tool_call', json({ ...minimal, arguments: args })).arguments).toEqual(
      args,
    );
  });

  it('whose arguments cannot be written as JSON are invalid_message when encoding', () => {
    const circular: Record<string, unknown> = {};
    circular['self'] = circular;
    for (const args of [{ big: 10n }, circular]) {
      const err = protocolError(() => encodeMessage('tool_call', { ...minimal, arguments: args }));
      expect(err.code).toBe('invalid_message');
    }
  });
});

describe('bodies that are not JSON', () => {
  it.each([
    ['empty', ''],
    ['truncated', '{"v":1,"tool_call_id":"c1"'],
    ['trailing garbage', '{"v":1} x'],
    ['single quotes', "{'v':1}"],
    ['plain text', 'run ls please'],
  ])('%s bodies are malformed_json', (_what, text) => {
    expect(protocolError(() => decodeMessage('tool_call', enc(text))).code).toBe('malformed_json');
    expect(protocolError(() => parseJson(enc(text))).code).toBe('malformed_json');
  });

  it('bytes that are not UTF-8 are malformed_json, even inside a JSON string', () => {
    const prefix = enc('{"v":1,"tool_call_id":"c1","tool_name":"a.b","arguments":{"x":"');
    const suffix = enc('"}}');
    const body = new Uint8Array([...prefix, 0xc3, 0x28, ...suffix]);
    for (const bytes of [body, new Uint8Array([0xff, 0xfe, 0x7b, 0x7d])]) {
      const err = protocolError(() => decodeMessage('tool_call', bytes));
      expect(err.code).toBe('malformed_json');
      expect(err.cause).toBeDefined();
    }
  });

  it('parseJson returns the value of valid UTF-8 JSON', () => {
    expect(parseJson(enc('{"a":[1,"é"]}'))).toEqual({ a: [1, 'é'] });
  });
});

describe('validateMessage', () => {
  it('checks a value that is already parsed', () => {
    expect(validateMessage('cancel', { v: 1, tool_call_id: 'c1' })).toEqual({
      v: 1,
      tool_call_id: 'c1',
    });
    expect(protocolError(() => validateMessage('cancel', { v: 1 })).code).toBe('invalid_message');
    expect(
      protocolError(() => validateMessage('cancel', { v: '1', tool_call_id: 'c1' })).code,
    ).toBe('unsupported_version');
  });
});
