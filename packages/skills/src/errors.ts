// Why a skill package was refused. Each check has its own stable code so the api can answer
// an upload with a machine-readable reason; none of them has a fitting code in the protocol's
// taxonomy (they are upload checks, not wire errors), so they live here.

export const SkillPackageErrorCode = {
  not_a_zip: 'not_a_zip',
  /** The zip's structure or data is damaged: bad headers, bad deflate data, a CRC mismatch. */
  corrupt_zip: 'corrupt_zip',
  zip_too_large: 'zip_too_large',
  too_many_entries: 'too_many_entries',
  /** Over the limit by the central directory, or while inflating (a directory that lies). */
  uncompressed_too_large: 'uncompressed_too_large',
  unsafe_path: 'unsafe_path',
  symlink: 'symlink',
  encrypted: 'encrypted',
  /** A compression method other than stored (0) or deflate (8). */
  unsupported_compression: 'unsupported_compression',
  /** Two entries with one path, or a file where another entry needs a folder. */
  duplicate_entry: 'duplicate_entry',
  no_root_folder: 'no_root_folder',
  multiple_roots: 'multiple_roots',
  missing_skill_md: 'missing_skill_md',
  /** SKILL.md is larger than MAX_SKILL_MD_BYTES; it is read whole to parse its front matter. */
  skill_md_too_large: 'skill_md_too_large',
  invalid_front_matter: 'invalid_front_matter',
  name_mismatch: 'name_mismatch',
  invalid_name: 'invalid_name',
  invalid_description: 'invalid_description',
  /** extractSkillZip only: the destination folder exists and is not empty. */
  destination_exists: 'destination_exists',
} as const;
export type SkillPackageErrorCode =
  (typeof SkillPackageErrorCode)[keyof typeof SkillPackageErrorCode];

export class SkillPackageError extends Error {
  readonly code: SkillPackageErrorCode;
  readonly details: Record<string, unknown>;
  constructor(
    code: SkillPackageErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'SkillPackageError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

/** Reads a skill package error code off any thrown value (by `code`, not `instanceof`). */
export function skillPackageErrorCodeOf(err: unknown): SkillPackageErrorCode | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const { code } = err;
  return typeof code === 'string' && Object.hasOwn(SkillPackageErrorCode, code)
    ? (code as SkillPackageErrorCode)
    : undefined;
}
