// Artifact store errors. None of these has a fitting code in the protocol's taxonomy (they are
// storage outcomes, not wire errors), so they are a package-local class with its own stable
// codes; callers map them at their boundary (the api to 400/404/413, the skills service to a
// failed tool result).

export const ArtifactErrorCode = {
  /** A key or prefix breaks the key rules (absolute, `..`, empty segment, backslash, NUL...). */
  invalid_key: 'invalid_key',
  /** No object under that key. */
  not_found: 'not_found',
  /** The object grew past `maxBytes` while being written; nothing was stored. */
  too_large: 'too_large',
} as const;
export type ArtifactErrorCode = (typeof ArtifactErrorCode)[keyof typeof ArtifactErrorCode];

export class ArtifactError extends Error {
  readonly code: ArtifactErrorCode;
  readonly details: Record<string, unknown>;
  constructor(
    code: ArtifactErrorCode,
    message: string,
    options: { details?: Record<string, unknown>; cause?: unknown } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'ArtifactError';
    this.code = code;
    this.details = options.details ?? {};
  }
}

/** Reads an artifact error code off any thrown value (by `code`, not `instanceof`). */
export function artifactErrorCodeOf(err: unknown): ArtifactErrorCode | undefined {
  if (typeof err !== 'object' || err === null || !('code' in err)) return undefined;
  const { code } = err;
  return typeof code === 'string' && Object.hasOwn(ArtifactErrorCode, code)
    ? (code as ArtifactErrorCode)
    : undefined;
}
