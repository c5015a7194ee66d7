import { describe, expect, it } from 'vitest';
import { decodeMessage } from './codec.ts';
import { decidedCallEnvelope, toolCallEnvelope } from './envelope.ts';
import { ProtocolError } from './errors.ts';
import { Header } from './headers.ts';
import { createSubjects } from './subjects.ts';

const subjects = createSubjects('cg');
const scope = { project: 'proj_1', channel: 'main' };
const call = {
  tool_call_id: 'call-1',
  tool_name: 'skills.run_cmd',
  arguments: { cmd: 'ls' },
};

/** NATS subject matching: `*` matches one token, a trailing `>` one or more. */
function matches(filter: string, subject: string): boolean {
  const f = filter.split('.');
  const s = subject.split('.');
  for (let i = 0; i < f.length; i++) {
    if (f[i] === '>') return s.length > i;
    if (i >= s.length || (f[i] !== '*' && f[i] !== s[i])) return false;
  }
  return f.length === s.length;
}

function thrown(fn: () => unknown): ProtocolError {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    return err as ProtocolError;
  }
  throw new Error('expected a ProtocolError');
}

describe('toolCallEnvelope', () => {
  it('puts a call on its target and tool subject, named by its id in header and Nats-Msg-Id', () => {
    const e = toolCallEnvelope(subjects, { ...scope, call });
    expect(e.subject).toBe('cg.v1.proj_1.main.cmd.tool.skills.run_cmd');
    expect(subjects.parse(e.subject)).toMatchObject({ target: 'skills', tool: 'run_cmd' });
    expect(e.headers).toEqual({ [Header.toolCallId]: 'call-1' });
    expect(e.msgID).toBe('proj_1/call-1');
    expect(decodeMessage('tool_call', e.data)).toEqual({
      v: 1,
      ...call,
      after_execution: 'suspend',
    });
  });

  it('is matched by the filters its project and the tool services read, not by another project', () => {
    const e = toolCallEnvelope(subjects, { ...scope, call });
    expect(matches(subjects.allToolCallsFilter('proj_1'), e.subject)).toBe(true);
    expect(matches(subjects.toolCallFilter('skills', 'proj_1'), e.subject)).toBe(true);
    expect(matches(subjects.allToolCallsFilter(), e.subject)).toBe(true);
    expect(matches(subjects.allToolCallsFilter('proj_2'), e.subject)).toBe(false);
    expect(matches(subjects.toolCallFilter('search'), e.subject)).toBe(false);
  });

  it('carries the turn a call belongs to, the credential and a resend under its own id', () => {
    const e = toolCallEnvelope(subjects, {
      ...scope,
      call,
      turn: { agentId: 'ada', turnId: 'turn-1', turnEpoch: 3 },
      credentialId: '0b9a6a4e-3a1c-4a52-9d52-2b1f1f6f0c11',
      resendNonce: 'n1',
    });
    expect(e.headers).toEqual({
      [Header.toolCallId]: 'call-1',
      [Header.agentId]: 'ada',
      [Header.turnId]: 'turn-1',
      [Header.turnEpoch]: '3',
      [Header.credentialId]: '0b9a6a4e-3a1c-4a52-9d52-2b1f1f6f0c11',
    });
    expect(e.msgID).toBe('proj_1/call-1/resend/n1');
    expect(e.msgID).not.toBe(toolCallEnvelope(subjects, { ...scope, call }).msgID);
  });

  it('refuses a bad name or body with the code that names it', () => {
    expect(thrown(() => toolCallEnvelope(subjects, { ...scope, project: 'a.b', call })).code).toBe(
      'invalid_id',
    );
    const noDot = { ...call, tool_name: 'run_cmd' };
    expect(thrown(() => toolCallEnvelope(subjects, { ...scope, call: noDot })).code).toBe(
      'invalid_id',
    );
    const badAgent = { agentId: 'a b' };
    expect(thrown(() => toolCallEnvelope(subjects, { ...scope, call, turn: badAgent })).code).toBe(
      'invalid_id',
    );
    const badBody = { ...call, timeout_ms: -1 };
    expect(thrown(() => toolCallEnvelope(subjects, { ...scope, call: badBody })).code).toBe(
      'invalid_message',
    );
  });
});

describe('decidedCallEnvelope', () => {
  it('publishes the parked message again, marked with its approval, once per decision', () => {
    const first = toolCallEnvelope(subjects, { ...scope, call, turn: { agentId: 'ada' } });
    const e = decidedCallEnvelope({
      project_id: scope.project,
      tool_call_id: call.tool_call_id,
      approval_id: 'appr-1',
      subject: first.subject,
      body: Buffer.from(first.data),
      headers: first.headers,
    });
    expect(e.subject).toBe(first.subject);
    expect(e.data).toEqual(first.data);
    expect(e.headers).toEqual({ ...first.headers, [Header.approvalId]: 'appr-1' });
    expect(e.msgID).toBe('proj_1/call-1/approval-decided');
  });
});
