import { describe, expect, it } from 'vitest';
import { createRedactor, REDACTED } from './redact.ts';

describe('redactor', () => {
  it('replaces every secret, in plain, base64 and percent-encoded form, deep in values', () => {
    const r = createRedactor();
    r.add('user:p@ss w0rd');
    const b64 = Buffer.from('user:p@ss w0rd').toString('base64');
    const out = r.redact({
      text: 'auth was user:p@ss w0rd',
      headers: { authorization: `Basic ${b64}` },
      list: ['x', 'user%3Ap%40ss%20w0rd'],
      n: 1,
      nothing: null,
    });
    expect(out).toEqual({
      text: `auth was ${REDACTED}`,
      headers: { authorization: `Basic ${REDACTED}` },
      list: ['x', REDACTED],
      n: 1,
      nothing: null,
    });
    expect(r.redactText('no secret here')).toBe('no secret here');
  });

  it('replaces a longer secret whole when it contains a shorter one', () => {
    const r = createRedactor();
    r.add('abc');
    r.add('abcdef');
    expect(r.redactText('x abcdef y abc')).toBe(`x ${REDACTED} y ${REDACTED}`);
  });

  it('returns the value itself when it holds no secret', () => {
    const r = createRedactor();
    const v = { a: 1 };
    expect(r.redact(v)).toBe(v);
  });
});
