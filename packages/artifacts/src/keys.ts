// Object key builders: the one place that knows where things live in the artifact store. Every
// part is checked, so a caller's bad id fails here with `invalid_key` instead of landing an
// object under a surprising name.
import { ID_PATTERN } from '@toolmesh/protocol';
import { ArtifactError } from './errors.ts';
import { assertKey, MAX_SEGMENT_BYTES } from './key.ts';

const SHA256_PATTERN = /^[0-9a-f]{64}$/;
/** Longest file name kept by `sanitizeFilename`, in characters. */
export const MAX_FILENAME_CHARS = 200;

function part(field: string, value: unknown, pattern: RegExp, rule: string): string {
  if (typeof value !== 'string' || !pattern.test(value)) {
    throw new ArtifactError(
      'invalid_key',
      `${field} ${JSON.stringify(value)} is invalid: ${rule}`,
      {
        details: { field, reason: rule },
      },
    );
  }
  return value;
}

const id = (field: string, value: unknown) =>
  part(field, value, ID_PATTERN, 'use 1-64 characters of [A-Za-z0-9_-]');
const sha256 = (value: unknown) =>
  part('sha256', value, SHA256_PATTERN, 'use 64 lowercase hex digits');

/** `skills/<project>/<name>/<sha256>/skill.zip`: one object per uploaded skill version. */
export function skillZipKey(project: string, skill: string, version: string): string {
  return assertKey(
    `skills/${id('project', project)}/${id('skill', skill)}/${sha256(version)}/skill.zip`,
  );
}

/** The prefix of every version of one skill, or of every skill of a project. */
export function skillZipPrefix(project: string, skill?: string): string {
  const base = `skills/${id('project', project)}/`;
  return skill === undefined ? base : `${base}${id('skill', skill)}/`;
}

/** `artifacts/<project>/<artifactId>/<filename>`, the filename sanitized. */
export function artifactKey(project: string, artifactId: string, filename: string): string {
  return assertKey(
    `artifacts/${id('project', project)}/${id('artifactId', artifactId)}/${sanitizeFilename(filename)}`,
  );
}

/** The prefix of every artifact of a project. */
export function artifactPrefix(project: string): string {
  return `artifacts/${id('project', project)}/`;
}

// eslint-disable-next-line no-control-regex
const CONTROL_CHARS = /[\u0000-\u001f\u007f-\u009f]/g;

/**
 * A file name made safe to be one key segment: the basename only (after `/` or `\`), control
 * characters dropped, leading dots replaced (dot segments are reserved, see key.ts), at most
 * 200 characters and 255 bytes, never empty. Command outputs name their files, so this is a
 * transformation rather than a refusal: `../../etc/passwd` becomes `passwd`.
 */
export function sanitizeFilename(filename: string): string {
  const base = filename.split(/[/\\]/).pop() ?? '';
  let name = base.replace(CONTROL_CHARS, '').trim().replace(/^\.+/, '_');
  let chars = Array.from(name).slice(0, MAX_FILENAME_CHARS);
  while (Buffer.byteLength(chars.join('')) > MAX_SEGMENT_BYTES) chars = chars.slice(0, -1);
  name = chars.join('');
  return name === '' ? 'file' : name;
}
