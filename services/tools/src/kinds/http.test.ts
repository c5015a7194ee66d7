import { describe, expect, it } from 'vitest';
import { retryAfterMs } from './http.ts';

describe('retryAfterMs', () => {
  it('reads delta-seconds and HTTP dates', () => {
    const now = Date.parse('2030-01-01T00:00:00Z');
    expect(retryAfterMs('3', now)).toBe(3000);
    expect(retryAfterMs(' 0 ', now)).toBe(0);
    expect(retryAfterMs('Tue, 01 Jan 2030 00:00:05 GMT', now)).toBe(5000);
    expect(retryAfterMs('Mon, 31 Dec 2029 23:00:00 GMT', now)).toBe(0);
    expect(retryAfterMs(['2', '9'], now)).toBe(2000);
    expect(retryAfterMs(undefined, now)).toBeUndefined();
    expect(retryAfterMs('soon', now)).toBeUndefined();
  });
});
