import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES,
  ErrorCode,
  errorCodeOf,
  isErrorCode,
  isRetryable,
  MeshError,
  ProtocolError,
  ResultStatus,
  RetryableError,
  statusForCode,
  ToolError,
} from './errors.ts';

const codes = Object.keys(ERROR_CODES) as ErrorCode[];

describe('error codes', () => {
  it.each(codes)('%s says whether it is retryable and which status it maps to', (code) => {
    expect(typeof isRetryable(code)).toBe('boolean');
    expect(Object.values(ResultStatus)).toContain(statusForCode(code));
    expect(ERROR_CODES[code].summary.length).toBeGreaterThan(0);
    expect(ErrorCode[code]).toBe(code);
    expect(isErrorCode(code)).toBe(true);
  });

  it('only infrastructure trouble and a busy lease are retryable', () => {
    expect(codes.filter(isRetryable).sort()).toEqual(['lease_busy', 'unavailable']);
  });

  it('map timeouts and cancels to their own result statuses', () => {
    expect(statusForCode('timeout')).toBe('timeout');
    expect(statusForCode('canceled')).toBe('canceled');
    expect(statusForCode('invalid_arguments')).toBe('failed');
  });

  it('are recognized only when they are one of the table', () => {
    for (const v of ['nope', '', 'toString', '__proto__', 42, undefined, null])
      expect(isErrorCode(v)).toBe(false);
  });
});

describe('errorCodeOf', () => {
  it('reads the code of mesh errors', () => {
    expect(errorCodeOf(new ProtocolError('invalid_id', 'bad'))).toBe('invalid_id');
    expect(errorCodeOf(new RetryableError('db down'))).toBe('unavailable');
  });

  it('reads a known code off any object, not only by instanceof', () => {
    expect(errorCodeOf({ code: 'timeout' })).toBe('timeout');
    expect(errorCodeOf(Object.assign(new Error('x'), { code: 'lease_busy' }))).toBe('lease_busy');
  });

  it('returns undefined for anything without a known code', () => {
    const nodeError = Object.assign(new Error('refused'), { code: 'ECONNREFUSED' });
    for (const v of [nodeError, new Error('plain'), { code: 503 }, 'invalid_id', null, undefined]) {
      expect(errorCodeOf(v)).toBeUndefined();
    }
  });
});

describe('error classes', () => {
  it('ToolError defaults to tool_error and accepts another code', () => {
    const plain = new ToolError('the file does not exist');
    expect(plain.code).toBe('tool_error');
    expect(plain.retryable).toBe(false);
    expect(new ToolError('bad args', { code: 'invalid_arguments' }).code).toBe('invalid_arguments');
  });

  it('carry a message, a cause, details and their own name', () => {
    const cause = new Error('socket closed');
    const err = new ToolError('failed', { cause, details: { path: '/x' } });
    expect(err).toBeInstanceOf(MeshError);
    expect(err).toBeInstanceOf(Error);
    expect(err.name).toBe('ToolError');
    expect(err.message).toBe('failed');
    expect(err.cause).toBe(cause);
    expect(err.details).toEqual({ path: '/x' });
    expect(new ProtocolError('malformed_json', 'x').name).toBe('ProtocolError');
  });

  it('RetryableError is unavailable and retryable; ProtocolError is terminal', () => {
    const retry = new RetryableError('postgres is down');
    expect([retry.code, retry.retryable]).toEqual(['unavailable', true]);
    expect(new ProtocolError('invalid_message', 'x').retryable).toBe(false);
    expect('cause' in new RetryableError('no cause')).toBe(false);
  });
});
