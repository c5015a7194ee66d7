// Reading a skill zip with yauzl: the central directory first (counts, names, declared sizes),
// then each entry's data through a guard. yauzl's own size validation is turned off so that
// every failure maps to one of our codes; the guard does that job and more: an entry that
// inflates past its declared size (a central directory that lies, the zip-bomb trick) fails at
// once with `uncompressed_too_large`, the running total is held to the limit whatever the
// directory said, and short data or a CRC mismatch is `corrupt_zip`.
import { createHash } from 'node:crypto';
import { readFile, stat } from 'node:fs/promises';
import { Readable } from 'node:stream';
import { crc32 } from 'node:zlib';
import yauzl from 'yauzl';
import type { ZipFile } from 'yauzl';
import { checkEntry } from './entry-rules.ts';
import type { CheckedEntry } from './entry-rules.ts';
import { SkillPackageError } from './errors.ts';
import type { SkillZipLimits } from './limits.ts';

export interface OpenedZip {
  readonly zip: ZipFile;
  readonly sha256: string;
  readonly sizeBytes: number;
  /** Every entry, checked one by one, in central-directory order. */
  readonly entries: readonly CheckedEntry[];
  /**
   * An entry's data, inflated and guarded; `counter` carries the running total. Lazy: nothing
   * is read (and no error can fire unheard) until the stream is consumed.
   */
  open(entry: CheckedEntry, counter: ByteCounter): Readable;
}

export interface ByteCounter {
  total: number;
}

const MiB = 1024 * 1024;
const mib = (n: number) => `${(n / MiB).toFixed(1)} MiB`;

/**
 * Loads the zip (a path is read whole: it is at most `maxZipBytes`, and the bytes checked are
 * then exactly the bytes hashed) and checks its central directory.
 */
export async function openSkillZip(
  data: Uint8Array | string,
  limits: SkillZipLimits,
): Promise<OpenedZip> {
  const tooBig = (sizeBytes: number) =>
    new SkillPackageError(
      'zip_too_large',
      `the zip is ${mib(sizeBytes)}; at most ${mib(limits.maxZipBytes)} is allowed`,
      { details: { sizeBytes, maxZipBytes: limits.maxZipBytes } },
    );
  // A path is refused by its size before it is read, and checked again after (it may grow).
  if (typeof data === 'string') {
    const { size } = await stat(data);
    if (size > limits.maxZipBytes) throw tooBig(size);
  }
  const bytes =
    typeof data === 'string'
      ? await readFile(data)
      : Buffer.from(data.buffer, data.byteOffset, data.byteLength);
  const sizeBytes = bytes.length;
  if (sizeBytes > limits.maxZipBytes) throw tooBig(sizeBytes);
  const sha256 = createHash('sha256').update(bytes).digest('hex');

  let zip: ZipFile;
  try {
    zip = await yauzl.fromBufferPromise(bytes, {
      decodeStrings: false,
      validateEntrySizes: false,
      autoClose: false,
    });
  } catch (err) {
    throw new SkillPackageError('not_a_zip', `not a zip file: ${(err as Error).message}`, {
      cause: err,
    });
  }
  if (zip.entryCount > limits.maxEntries) {
    throw new SkillPackageError(
      'too_many_entries',
      `the zip has ${zip.entryCount} entries; at most ${limits.maxEntries} are allowed`,
      { details: { entries: zip.entryCount, maxEntries: limits.maxEntries } },
    );
  }

  const entries: CheckedEntry[] = [];
  let declared = 0;
  try {
    for await (const raw of zip.eachEntry()) {
      const entry = checkEntry(raw);
      declared += entry.isDirectory ? 0 : entry.size;
      if (declared > limits.maxUncompressedBytes) {
        throw tooLarge(
          `the zip's entries declare ${mib(declared)} uncompressed; at most ${mib(limits.maxUncompressedBytes)} is allowed`,
          limits,
          { declared },
        );
      }
      entries.push(entry);
    }
  } catch (err) {
    if (err instanceof SkillPackageError) throw err;
    // yauzl refuses "strong encryption" itself, before we see the entry.
    const message = (err as Error).message;
    const code = /encryption/i.test(message) ? 'encrypted' : 'corrupt_zip';
    throw new SkillPackageError(code, `the zip is unreadable: ${message}`, { cause: err });
  }

  return {
    zip,
    sha256,
    sizeBytes,
    entries,
    open: (entry, counter) =>
      Readable.from(guarded(zip, entry, counter, limits), { objectMode: false }),
  };
}

function tooLarge(
  message: string,
  limits: SkillZipLimits,
  details: Record<string, unknown>,
): SkillPackageError {
  return new SkillPackageError('uncompressed_too_large', message, {
    details: { ...details, maxUncompressedBytes: limits.maxUncompressedBytes },
  });
}

function corrupt(entry: CheckedEntry, reason: string, cause?: unknown): SkillPackageError {
  return new SkillPackageError('corrupt_zip', `zip entry ${entry.path} is corrupt: ${reason}`, {
    details: { entry: entry.path, reason },
    cause,
  });
}

/** An entry's inflated bytes, counted, limited and CRC-checked on their way through. */
async function* guarded(
  zip: ZipFile,
  entry: CheckedEntry,
  counter: ByteCounter,
  limits: SkillZipLimits,
): AsyncGenerator<Buffer> {
  let size = 0;
  let crc = 0;
  let stream: Readable;
  try {
    stream = await zip.openReadStreamPromise(entry.entry);
  } catch (err) {
    throw corrupt(entry, (err as Error).message, err);
  }
  try {
    // Leaving this loop early (a limit hit, the consumer gone) destroys the stream, which
    // stops the inflating: a bomb is never inflated further than the first chunk too many.
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      size += chunk.length;
      counter.total += chunk.length;
      if (size > entry.size) {
        throw tooLarge(
          `zip entry ${entry.path} inflates past the ${entry.size} bytes the zip declares for it`,
          limits,
          { entry: entry.path, declared: entry.size },
        );
      }
      if (counter.total > limits.maxUncompressedBytes) {
        throw tooLarge(
          `the zip inflates to more than ${mib(limits.maxUncompressedBytes)}`,
          limits,
          { entry: entry.path },
        );
      }
      crc = crc32(chunk, crc);
      yield chunk;
    }
  } catch (err) {
    if (err instanceof SkillPackageError) throw err;
    // Bad deflate data, a truncated file.
    throw corrupt(entry, (err as Error).message, err);
  }
  if (size < entry.size)
    throw corrupt(entry, `${size} bytes instead of the declared ${entry.size}`);
  if (crc >>> 0 !== entry.entry.crc32 >>> 0) throw corrupt(entry, 'CRC-32 mismatch');
}
