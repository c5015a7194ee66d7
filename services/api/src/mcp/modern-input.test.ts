import { pino } from 'pino';
import { describe, expect, it } from 'vitest';
import { createInputStates, INPUT_STATE_TTL_MS, type InputBinding } from './modern-input.ts';

const KEY = Buffer.alloc(32, 7).toString('base64');
const binding: InputBinding = {
  project: 'p1',
  server: 'everything',
  method: 'tools/call',
  name: 'test_input_required_result_elicitation',
};
const log = pino({ level: 'silent' });

describe('the requestState the mesh seals around an MCP server state', () => {
  it('opens to the server state it sealed, on the request it was issued for', () => {
    const states = createInputStates(KEY, log);
    const raw = states.seal(binding, '{"round":1}');
    expect(states.owns(raw)).toBe(true);
    expect(raw).not.toContain('round');
    expect(states.open(raw, binding)).toEqual({ upstream: '{"round":1}' });
    expect(states.open(states.seal(binding, undefined), binding)).toEqual({ upstream: undefined });
  });

  it('carries the call and the input request a call waits on, and refuses them changed', () => {
    const states = createInputStates(KEY, log);
    const waiting = { toolCallId: 'call-1', inputRequestId: 'input-1' };
    const raw = states.seal(binding, undefined, waiting);
    expect(states.open(raw, binding)).toEqual({ upstream: undefined, waiting });
    // Another input request's id swapped in: the tag no longer matches.
    const [data, mac] = raw.slice('tm-input.1.'.length).split('.');
    const sealed = JSON.parse(Buffer.from(data!, 'base64url').toString('utf8')) as { w: string[] };
    sealed.w = ['call-1', 'input-2'];
    const swapped = `tm-input.1.${Buffer.from(JSON.stringify(sealed)).toString('base64url')}.${mac!}`;
    expect(() => states.open(swapped, binding)).toThrow(/signature does not match/);
    expect(() => states.open(raw, { ...binding, project: 'p2' })).toThrow(/another request/);
  });

  it('refuses a changed state, and one sealed with another key', () => {
    const states = createInputStates(KEY, log);
    const raw = states.seal(binding, 'x');
    expect(() => states.open(`${raw}-TAMPERED`, binding)).toThrow(/signature does not match/);
    const other = createInputStates(Buffer.alloc(32, 8).toString('base64'), log);
    expect(() => other.open(raw, binding)).toThrow(/signature does not match/);
    let caught: unknown;
    try {
      states.open(`${raw}x`, binding);
    } catch (err) {
      caught = err;
    }
    expect((caught as { code?: unknown } | undefined)?.code).toBe(-32602);
  });

  it("refuses a state on another project's, server's or tool's request", () => {
    const states = createInputStates(KEY, log);
    const raw = states.seal(binding, 'x');
    for (const other of [
      { ...binding, project: 'p2' },
      { ...binding, server: 'other' },
      { ...binding, server: undefined },
      { ...binding, name: 'test_simple_text' },
      { ...binding, method: 'prompts/get' },
    ]) {
      expect(() => states.open(raw, other)).toThrow(/issued for another request/);
    }
  });

  it('refuses a state past its expiry', () => {
    let now = 1_000_000;
    const states = createInputStates(KEY, log, () => now);
    const raw = states.seal(binding, 'x');
    now += INPUT_STATE_TTL_MS + 1;
    expect(() => states.open(raw, binding)).toThrow(/expired/);
  });
});
