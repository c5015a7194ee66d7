// The rules every object key obeys, whatever the backend. Keys are relative `a/b/c` paths that
// map onto a folder tree (fs) and onto object names (GCS, at most 1024 bytes), so a key valid
// for one adapter is valid for all. Segments starting with `.` are reserved: the fs adapter
// keeps its in-flight temp files under such names, so they can never collide with, or be listed
// as, an object.
import { ArtifactError } from './errors.ts';

/** GCS's limit on object names; the fs adapter keeps it too so keys move between backends. */
export const MAX_KEY_BYTES = 1024;
/** NAME_MAX of common filesystems. */
export const MAX_SEGMENT_BYTES = 255;

// C0 controls and DEL. NUL is among them: it truncates paths in C APIs.
// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f]/;

/** Why `key` is not a valid key, or undefined when it is. */
export function keyProblem(key: unknown): string | undefined {
  if (typeof key !== 'string') return 'must be a string';
  if (key.length === 0) return 'must not be empty';
  if (Buffer.byteLength(key) > MAX_KEY_BYTES) return `must be at most ${MAX_KEY_BYTES} bytes`;
  if (key.startsWith('/')) return 'must be relative (no leading /)';
  if (key.includes('\\')) return 'must not contain a backslash';
  if (key.includes('\0')) return 'must not contain NUL';
  if (CONTROL_CHARS.test(key)) return 'must not contain control characters';
  for (const segment of key.split('/')) {
    if (segment === '') return 'must not contain empty segments (//, trailing /)';
    if (segment === '..' || segment === '.') return 'must not contain . or .. segments';
    if (segment.startsWith('.')) return 'segments must not start with . (reserved)';
    if (Buffer.byteLength(segment) > MAX_SEGMENT_BYTES) {
      return `segments must be at most ${MAX_SEGMENT_BYTES} bytes`;
    }
  }
  return undefined;
}

/** Throws `invalid_key` unless `key` obeys the key rules. */
export function assertKey(key: unknown): string {
  const problem = keyProblem(key);
  if (problem !== undefined) {
    throw new ArtifactError(
      'invalid_key',
      `invalid artifact key ${JSON.stringify(key)}: ${problem}`,
      {
        details: { key, reason: problem },
      },
    );
  }
  return key as string;
}

/**
 * Prefixes match keys as plain string prefixes (as GCS does): `skills/p1` also matches
 * `skills/p10/...`; end the prefix with `/` to stay inside one folder. The empty prefix lists
 * everything. A prefix is valid when it is a valid key, a valid key followed by `/`, or a
 * valid key's beginning cut inside its last segment.
 */
export function assertPrefix(prefix: unknown): string {
  if (prefix === '') return prefix;
  if (typeof prefix !== 'string') return assertKey(prefix);
  const body = prefix.endsWith('/') ? prefix.slice(0, -1) : prefix;
  const problem = keyProblem(body);
  if (problem !== undefined) {
    throw new ArtifactError(
      'invalid_key',
      `invalid artifact key prefix ${JSON.stringify(prefix)}: ${problem}`,
      { details: { prefix, reason: problem } },
    );
  }
  return prefix;
}
