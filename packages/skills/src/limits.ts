// Limits on an uploaded skill zip. The defaults suit skills (instructions and a few scripts);
// a deployment passes its configured values, which override these one by one.

export interface SkillZipLimits {
  /** Size of the zip file itself. */
  maxZipBytes: number;
  /** Entries in the central directory, folders included. */
  maxEntries: number;
  /** Sum of the entries' uncompressed sizes, declared and actual. */
  maxUncompressedBytes: number;
}

const MiB = 1024 * 1024;

export const DEFAULT_SKILL_ZIP_LIMITS: Readonly<SkillZipLimits> = Object.freeze({
  maxZipBytes: 20 * MiB,
  maxEntries: 2000,
  maxUncompressedBytes: 100 * MiB,
});

/** SKILL.md is read whole to parse its front matter, so it has a bound of its own. */
export const MAX_SKILL_MD_BYTES = 1 * MiB;

export function resolveLimits(limits: Partial<SkillZipLimits> = {}): SkillZipLimits {
  const resolved: SkillZipLimits = {
    maxZipBytes: limits.maxZipBytes ?? DEFAULT_SKILL_ZIP_LIMITS.maxZipBytes,
    maxEntries: limits.maxEntries ?? DEFAULT_SKILL_ZIP_LIMITS.maxEntries,
    maxUncompressedBytes:
      limits.maxUncompressedBytes ?? DEFAULT_SKILL_ZIP_LIMITS.maxUncompressedBytes,
  };
  for (const [name, value] of Object.entries(resolved)) {
    if (!Number.isSafeInteger(value) || value < 0) {
      throw new RangeError(`skill zip limit ${name} must be a non-negative integer, got ${value}`);
    }
  }
  return resolved;
}
