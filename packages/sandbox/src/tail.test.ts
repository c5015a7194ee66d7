import { describe, expect, it } from 'vitest';
import { TailBuffer } from './tail.ts';

describe('TailBuffer', () => {
  it('keeps everything under the limit', () => {
    const tail = new TailBuffer(10);
    tail.push(Buffer.from('abc'));
    tail.push(Buffer.from('def'));
    expect(tail.result()).toEqual({ text: 'abcdef', truncated: false, totalBytes: 6 });
  });

  it('keeps the last bytes across chunks and counts all of them', () => {
    const tail = new TailBuffer(5);
    for (const chunk of ['0123', '4567', '89']) tail.push(Buffer.from(chunk));
    expect(tail.result()).toEqual({ text: '56789', truncated: true, totalBytes: 10 });
  });

  it('keeps the end of a single chunk larger than the limit', () => {
    const tail = new TailBuffer(3);
    tail.push(Buffer.from('abcdefgh'));
    expect(tail.result()).toEqual({ text: 'fgh', truncated: true, totalBytes: 8 });
  });

  it('drops a character cut in half at the start', () => {
    const tail = new TailBuffer(4);
    tail.push(Buffer.from('xé€')); // é is 2 bytes, € is 3: the last 4 bytes start inside é
    expect(tail.result()).toEqual({ text: '€', truncated: true, totalBytes: 6 });
  });

  it('keeps nothing with a zero limit but still counts', () => {
    const tail = new TailBuffer(0);
    tail.push(Buffer.from('abc'));
    expect(tail.result()).toEqual({ text: '', truncated: true, totalBytes: 3 });
  });
});
