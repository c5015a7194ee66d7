// What every adapter's put shares: the maxBytes rule and the pass-through that hashes and counts
// the bytes on their way to the backend, so the sha256 and size come from what was streamed,
// never from a second read of the stored object.
import { createHash } from 'node:crypto';
import { Transform } from 'node:stream';
import { ArtifactError } from './errors.ts';

/** Throws a RangeError unless `maxBytes` is absent or a non-negative integer. */
export function checkMaxBytes(maxBytes: number | undefined): void {
  if (maxBytes !== undefined && !(Number.isSafeInteger(maxBytes) && maxBytes >= 0)) {
    throw new RangeError(`maxBytes must be a non-negative integer, got ${maxBytes}`);
  }
}

export function tooLarge(key: string, maxBytes: number): ArtifactError {
  return new ArtifactError(
    'too_large',
    `artifact ${JSON.stringify(key)} is larger than the limit of ${maxBytes} bytes`,
    { details: { key, maxBytes } },
  );
}

/** A pass-through that hashes and counts, failing `too_large` past `maxBytes`. */
export function createMeter(key: string, maxBytes: number | undefined) {
  const hash = createHash('sha256');
  let size = 0;
  const stream = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      if (maxBytes !== undefined && size > maxBytes) {
        callback(tooLarge(key, maxBytes));
        return;
      }
      hash.update(chunk);
      callback(null, chunk);
    },
  });
  return { stream, result: () => ({ size, sha256: hash.digest('hex') }) };
}
