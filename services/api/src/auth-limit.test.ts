import { describe, expect, it } from 'vitest';
import { clientKey, createAuthLimiter } from './auth-limit.ts';

function clock() {
  let t = 1_000_000;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

describe('createAuthLimiter', () => {
  it('blocks an address after the limit until its window ends, others unaffected', () => {
    const c = clock();
    const l = createAuthLimiter({ limit: 3, windowMs: 60_000, maxClients: 10, now: c.now });
    expect(l.fail('a')).toBeUndefined();
    expect(l.fail('a')).toBeUndefined();
    expect(l.blockedFor('a')).toBeUndefined();
    expect(l.fail('a')).toBe(60);
    c.advance(15_500);
    expect(l.blockedFor('a')).toBe(45);
    expect(l.blockedFor('b')).toBeUndefined();
    c.advance(44_500);
    expect(l.blockedFor('a')).toBeUndefined();
    expect(l.fail('a')).toBeUndefined();
  });

  it('stays bounded: expired windows go, and past maxClients the oldest', () => {
    const c = clock();
    const l = createAuthLimiter({ limit: 1, windowMs: 1_000, maxClients: 3, now: c.now });
    for (const a of ['a', 'b', 'c', 'd']) l.fail(a);
    expect(l.size()).toBe(3);
    expect(l.blockedFor('a')).toBeUndefined();
    expect(l.blockedFor('d')).toBe(1);
    c.advance(1_000);
    l.fail('e');
    expect(l.size()).toBe(1);
  });

  it('does nothing when the limit is 0', () => {
    const l = createAuthLimiter({ limit: 0, windowMs: 1_000, maxClients: 3 });
    for (let i = 0; i < 100; i++) expect(l.fail('a')).toBeUndefined();
    expect(l.blockedFor('a')).toBeUndefined();
    expect(l.size()).toBe(0);
  });
});

describe('clientKey', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2::9', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:ffff::1', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['64:ff9b::192.0.2.1', '64:ff9b:0:0::/64'],
  ])('%s is counted as %s', (address, key) => {
    expect(clientKey(address)).toBe(key);
  });
});
