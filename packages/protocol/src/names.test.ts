import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ProtocolError } from './errors.ts';
import { assertId, IdKind, isValidId, isValidToolCallId } from './ids.ts';
import { createNames, MsgId } from './names.ts';
import { msgIdKeyOf, randomMsgIdKey, sealMsgId, toolCallIdOfMsgId } from './msg-id.ts';

function codeAndField(fn: () => unknown): { code: string; field: unknown } {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ProtocolError);
    const e = err as ProtocolError;
    return { code: e.code, field: e.details?.['field'] };
  }
  throw new Error('expected a ProtocolError, nothing was thrown');
}

describe('ids', () => {
  it('accept 1-64 characters of [A-Za-z0-9_-]', () => {
    for (const id of ['a', 'A-z_09', 'x'.repeat(64)]) expect(isValidId(id)).toBe(true);
    for (const id of [
      '',
      'x'.repeat(65),
      'a.b',
      'a*',
      'a>',
      'a b',
      'é',
      'a\n',
      42,
      null,
      undefined,
    ]) {
      expect(isValidId(id)).toBe(false);
    }
  });

  it('allow tool call ids up to 128 characters', () => {
    expect(isValidToolCallId('x'.repeat(128))).toBe(true);
    expect(isValidToolCallId('x'.repeat(129))).toBe(false);
    expect(isValidToolCallId('call.1')).toBe(false);
    expect(assertId(IdKind.toolCall, 'x'.repeat(100))).toBe('x'.repeat(100));
  });

  it('assertId returns a valid id and rejects others naming the field and the limit', () => {
    expect(assertId(IdKind.agent, 'agent-1')).toBe('agent-1');
    for (const kind of Object.values(IdKind)) {
      expect(codeAndField(() => assertId(kind, 'no.dots'))).toEqual({
        code: 'invalid_id',
        field: kind,
      });
    }
    expect(() => assertId(IdKind.project, 'x'.repeat(65))).toThrow(/project .* 1-64 characters/);
    expect(() => assertId(IdKind.toolCall, '')).toThrow(/tool_call_id .* 1-128 characters/);
  });
});

describe('names', () => {
  it('are derived from the root', () => {
    const names = createNames('t0a1b2c3d4e');
    expect(names.projectCommandStream('proj_1')).toBe('t0a1b2c3d4e_CMD_proj_1');
    expect(names.eventStream).toBe('t0a1b2c3d4e_EVT');
    expect(names.leaseBucket).toBe('t0a1b2c3d4e_leases');
    expect(names.toolConsumer('skills')).toBe('t0a1b2c3d4e_tool_skills');
    expect(names.toolServiceConsumer('tools')).toBe('t0a1b2c3d4e_svc_tools');
    expect(names.agentConsumer('worker')).toBe('t0a1b2c3d4e_agent_worker');
    expect(names.cancelConsumer).toBe('t0a1b2c3d4e_cancels');
    expect(names.liveFeedConsumer('proj_1', 'N0nce')).toBe('t0a1b2c3d4e_feed_proj_1_N0nce');
  });

  it('default to the cg root', () => {
    const names = createNames();
    expect([names.projectCommandStream('p1'), names.eventStream, names.leaseBucket]).toEqual([
      'cg_CMD_p1',
      'cg_EVT',
      'cg_leases',
    ]);
  });

  it('of roots that differ only in case never collide', () => {
    expect(createNames('cg').projectCommandStream('p')).not.toBe(
      createNames('CG').projectCommandStream('p'),
    );
  });

  it('of two roots never collide', () => {
    const a = createNames('one');
    const b = createNames('two');
    const [ap, bp] = [a.projectCommandStream('p'), b.projectCommandStream('p')];
    expect(new Set([ap, a.eventStream, bp, b.eventStream]).size).toBe(4);
    expect(a.leaseBucket).not.toBe(b.leaseBucket);
    expect(a.toolConsumer('skills')).not.toBe(b.toolConsumer('skills'));
  });

  it('read the project back from a project command stream, and nothing from another stream', () => {
    const names = createNames('t1');
    expect(names.projectOfCommandStream(names.projectCommandStream('a-b_c'))).toBe('a-b_c');
    for (const other of ['t1_EVT', 't1_CMD', 't1_CMD_', 't2_CMD_p', 'KV_t1_leases', 't1_CMD_a.b'])
      expect(names.projectOfCommandStream(other)).toBeUndefined();
    expect(() => names.projectCommandStream('a.b')).toThrow(/project/);
  });

  it('reject a root that would make invalid stream or bucket names', () => {
    for (const root of ['', 'a.b', 'a*', 'a>', 'a b']) {
      expect(codeAndField(() => createNames(root))).toEqual({ code: 'invalid_id', field: 'root' });
    }
  });

  it('reject a consumer target that is not an id', () => {
    const names = createNames('cg');
    expect(codeAndField(() => names.toolConsumer('a.b'))).toEqual({
      code: 'invalid_id',
      field: 'target',
    });
    expect(codeAndField(() => names.agentConsumer('*'))).toEqual({
      code: 'invalid_id',
      field: 'target',
    });
    expect(codeAndField(() => names.liveFeedConsumer('a.*', 'N0nce'))).toEqual({
      code: 'invalid_id',
      field: 'project',
    });
  });
});

describe('queue groups', () => {
  it('derive the MCP discovery queue from the root', () => {
    expect(createNames('cg').mcpDiscoveryQueue).toBe('cg_mcp_discovery');
    expect(createNames('t1').mcpDiscoveryQueue).toBe('t1_mcp_discovery');
  });
});

describe('lease keys', () => {
  const names = createNames('cg');

  it('scope the tool call id by project', () => {
    expect(names.leaseKey('proj', 'call_1')).toBe('proj.call_1');
    expect(names.leaseKey('other', 'call_1')).not.toBe(names.leaseKey('proj', 'call_1'));
    expect(names.leaseKey('p', 'x'.repeat(128))).toBe(`p.${'x'.repeat(128)}`);
  });

  it('reject a bad project or tool call id, naming it', () => {
    expect(codeAndField(() => names.leaseKey('a.b', 'call'))).toEqual({
      code: 'invalid_id',
      field: 'project',
    });
    expect(codeAndField(() => names.leaseKey('', 'call'))).toEqual({
      code: 'invalid_id',
      field: 'project',
    });
    for (const id of ['', 'a.b', 'a*', '>', 'x'.repeat(129), 'a/b']) {
      expect(codeAndField(() => names.leaseKey('proj', id))).toEqual({
        code: 'invalid_id',
        field: 'tool_call_id',
      });
    }
  });
});

describe('message ids', () => {
  it('are scoped by project and distinct per kind of message', () => {
    const ids = [
      MsgId.toolCall('p', 'c1'),
      MsgId.toolCall('q', 'c1'),
      MsgId.toolCallResend('p', 'c1', 'n1'),
      MsgId.toolCallResend('p', 'c1', 'n2'),
      MsgId.toolResult('p', 'c1'),
      MsgId.wakeup('p', 'agent', 'c1'),
    ];
    expect(new Set(ids).size).toBe(ids.length);
    expect(MsgId.toolCall('p', 'c1')).toBe(MsgId.toolCall('p', 'c1'));
  });
});

describe('sealed message ids', () => {
  it('only the key that sealed an id seals it again; the readable id stays in front', () => {
    const key = msgIdKeyOf('seed of one credential');
    const id = MsgId.toolCall('p', 'c1');
    const sealed = sealMsgId(key, id);
    expect(sealed).toMatch(/^p\/c1\/[A-Za-z0-9_-]{22}$/);
    expect(sealMsgId(msgIdKeyOf('seed of one credential'), id)).toBe(sealed);
    expect(sealMsgId(msgIdKeyOf('seed of another'), id)).not.toBe(sealed);
    expect(sealMsgId(randomMsgIdKey(), id)).not.toBe(sealed);
    // The MAC covers the project: the same call id in another project seals differently.
    expect(sealMsgId(key, MsgId.toolCall('q', 'c1')).slice(2)).not.toBe(sealed.slice(2));
  });

  it('name a call by the first segment after its project, or whole without one', () => {
    const sealed = sealMsgId(randomMsgIdKey(), MsgId.toolCall('demo', 'call-1'));
    expect(toolCallIdOfMsgId('demo', sealed)).toBe('call-1');
    expect(toolCallIdOfMsgId('demo', 'demo/call-1')).toBe('call-1');
    expect(toolCallIdOfMsgId('demo', MsgId.toolCallResend('demo', 'x', 'n'))).toBe('x');
    expect(toolCallIdOfMsgId('demo', 'call-2')).toBe('call-2');
    expect(toolCallIdOfMsgId('demo', 'other/call-1')).toBeUndefined();
    expect(toolCallIdOfMsgId('demo', undefined)).toBeUndefined();
  });
});

describe('the MAC of a sealed id', () => {
  it('is HMAC-SHA256 of the readable id under the key derived from the secret', () => {
    const secret = 'SUAseedofacredential';
    const derived = createHmac('sha256', secret).update('toolmesh nats-msg-id v1').digest();
    for (const id of ['p/c1', 'p/wakeup/agent/ü-not-an-id', 'x'.repeat(300)]) {
      const mac = createHmac('sha256', derived).update(id).digest('base64url').slice(0, 22);
      expect(sealMsgId(msgIdKeyOf(secret), id)).toBe(`${id}/${mac}`);
    }
  });
});
