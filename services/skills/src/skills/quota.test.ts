import { errorCodeOf, statusForCode } from '@toolmesh/protocol';
import { describe, expect, it } from 'vitest';
import { admitted, quotaError } from './quota.ts';

describe('quota errors', () => {
  it('a refusal is a terminal quota_exceeded naming the quota, its limit and the count', () => {
    const err = quotaError({ admitted: false, quota: 'sandboxes', limit: 2, current: 2 });
    expect(errorCodeOf(err)).toBe('quota_exceeded');
    expect(err.retryable).toBe(false);
    expect(statusForCode(err.code)).toBe('failed');
    expect(err.details).toEqual({ quota: 'sandboxes', limit: 2, current: 2 });
    expect(err.message).toMatch(/quota of 2 live sandboxes \(2 now\)/);
  });

  it('admitted passes the value through and throws the refusal', () => {
    expect(admitted({ admitted: true, value: 7 })).toBe(7);
    expect(() =>
      admitted({ admitted: false, quota: 'running_tasks', limit: 1, current: 3 }),
    ).toThrow(/running async tasks/);
  });
});
