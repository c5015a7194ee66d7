import { randomBytes } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { encodeCommandId, swapCommandId, WrapCache, type WrapKey } from './wrap-cache.ts';

const newId = () => randomBytes(16).toString('base64url');
/** A stand-in for the runtime's wrap: the encoding raw and percent-encoded, as the runtime puts it. */
function fakeWrap() {
  const calls = { wraps: 0, ended: 0 };
  const wrap = (k: WrapKey) => {
    calls.wraps++;
    const e = encodeCommandId(k.commandId);
    return Promise.resolve({
      line: `bwrap --setenv SRT_ENCODED_CMD ${e} --setenv HTTP_PROXY 'http://srt.${encodeURIComponent(e)}:tok@localhost:3128' -- x`,
      ended: () => void calls.ended++,
    });
  };
  return { calls, wrap };
}
const key = (commandId: string): WrapKey => ({
  script: 's',
  commandId,
  workdir: '/w',
  allowRead: ['/opt'],
});

describe('wrap cache', () => {
  it('reuses a wrap with the new command id in both places, and wraps afresh once expired', async () => {
    let now = 0;
    const { calls, wrap } = fakeWrap();
    const cache = new WrapCache(wrap, 1_000, () => now);
    const a = newId();
    const b = newId();
    const first = await cache.wrap(key(a));
    const second = await cache.wrap(key(b));
    expect(calls.wraps).toBe(1);
    expect(second.line).toBe((await wrap(key(b))).line);
    expect(second.line).not.toContain(encodeCommandId(a));
    first.ended();
    second.ended();
    expect(calls.ended).toBe(0);
    now = 2_000;
    const third = await cache.wrap(key(newId()));
    // The expired entry gave its reference back; the new one holds its own.
    expect(calls.ended).toBe(1);
    third.ended();
    cache.clear();
    expect(calls.ended).toBe(2);
  });

  it('keeps an expired wrap until the last command that got it has ended', async () => {
    let now = 0;
    const { calls, wrap } = fakeWrap();
    const cache = new WrapCache(wrap, 1_000, () => now);
    const running = await cache.wrap(key(newId()));
    now = 2_000;
    cache.clear();
    expect(calls.ended).toBe(0);
    running.ended();
    expect(calls.ended).toBe(1);
  });

  it('wraps every command for another policy or with a TTL of 0', async () => {
    const { calls, wrap } = fakeWrap();
    const cache = new WrapCache(wrap, 1_000);
    await cache.wrap(key(newId()));
    await cache.wrap({ ...key(newId()), workdir: '/other' });
    await cache.wrap({ ...key(newId()), allowRead: ['/srv'] });
    expect(calls.wraps).toBe(3);
    const off = new WrapCache(wrap, 0);
    await off.wrap(key(newId()));
    await off.wrap(key(newId()));
    expect(calls.wraps).toBe(5);
  });

  it('swaps ids whose encoding holds + / =', () => {
    const from = encodeCommandId('a'.repeat(22));
    const to = 'ab+/cd==';
    expect(swapCommandId(`x ${from} u=${encodeURIComponent(from)}`, from, to)).toBe(
      `x ab+/cd== u=ab%2B%2Fcd%3D%3D`,
    );
  });
});
