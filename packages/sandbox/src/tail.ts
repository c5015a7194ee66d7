// Keeps the last N bytes of a stream and counts all of them. Errors are printed at the end, so
// a limit must cut the head, never the tail (the reference implementation kept the head).
import type { OutputTail } from './provider.ts';

export class TailBuffer {
  readonly #limit: number;
  #chunks: Buffer[] = [];
  #kept = 0;
  #total = 0;

  constructor(limitBytes: number) {
    this.#limit = Math.max(0, Math.floor(limitBytes));
  }

  push(chunk: Buffer): void {
    this.#total += chunk.length;
    if (this.#limit === 0) return;
    const piece = chunk.length > this.#limit ? chunk.subarray(chunk.length - this.#limit) : chunk;
    this.#chunks.push(piece);
    this.#kept += piece.length;
    // Drop whole chunks from the front while the rest still covers the limit; the first kept
    // chunk is trimmed only when the result is read.
    while (this.#chunks.length > 1 && this.#kept - this.#chunks[0]!.length >= this.#limit) {
      this.#kept -= this.#chunks.shift()!.length;
    }
  }

  get totalBytes(): number {
    return this.#total;
  }

  result(): OutputTail {
    let bytes: Buffer = Buffer.concat(this.#chunks, this.#kept);
    if (bytes.length > this.#limit) bytes = bytes.subarray(bytes.length - this.#limit);
    const truncated = bytes.length < this.#total;
    if (truncated) bytes = dropLeadingContinuation(bytes);
    return { text: bytes.toString('utf8'), truncated, totalBytes: this.#total };
  }
}

/** A cut can land inside a multi-byte character; its orphaned continuation bytes are dropped. */
function dropLeadingContinuation(bytes: Buffer): Buffer {
  let start = 0;
  while (start < bytes.length && start < 3 && (bytes[start]! & 0xc0) === 0x80) start++;
  return bytes.subarray(start);
}
