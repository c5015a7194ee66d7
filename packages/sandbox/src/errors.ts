// Sandbox failures as mesh errors: a stable protocol code for the result, plus a finer `reason`
// the skills service can branch on (a path that escapes is the caller's fault; a sandbox that
// cannot start is ours).
import { MeshError, type ErrorCode, type ErrorOptions } from '@toolmesh/protocol';

export const SandboxErrorReason = {
  /** A workdir-relative path (cwd, file) resolves outside the workdir. */
  path_escape: 'path_escape',
  /** An env name that is not an identifier, is reserved, or a value with a NUL byte. */
  invalid_env: 'invalid_env',
  /** An empty argv, or a command too large to pass to the kernel. */
  invalid_command: 'invalid_command',
  /** A file or working directory that does not exist. */
  not_found: 'not_found',
  /** A file larger than the caller would read (details: size_bytes, limit_bytes). */
  too_large: 'too_large',
  /** A file that would take the sandbox past its disk limit (details: used_bytes, limit_bytes). */
  disk_full: 'disk_full',
  /** The sandbox or the provider was closed or destroyed. */
  closed: 'closed',
  /** bubblewrap, socat or ripgrep missing, or the runtime refused to start. */
  unavailable: 'unavailable',
  /** The process-wide runtime was initialised with another configuration. */
  runtime_conflict: 'runtime_conflict',
} as const;
export type SandboxErrorReason = (typeof SandboxErrorReason)[keyof typeof SandboxErrorReason];

function codeFor(reason: SandboxErrorReason): ErrorCode {
  switch (reason) {
    case 'path_escape':
    case 'invalid_env':
    case 'invalid_command':
    case 'not_found':
      return 'invalid_arguments';
    case 'closed':
    case 'too_large':
      return 'tool_error';
    case 'disk_full':
      return 'disk_full';
    case 'unavailable':
    case 'runtime_conflict':
      return 'internal_error';
    default: {
      const never: never = reason;
      throw new Error(`unknown sandbox error reason ${String(never)}`);
    }
  }
}

export class SandboxError extends MeshError {
  readonly reason: SandboxErrorReason;
  constructor(reason: SandboxErrorReason, message: string, options: ErrorOptions = {}) {
    super(codeFor(reason), message, {
      ...options,
      details: { reason, ...options.details },
    });
    this.reason = reason;
  }
}

export function isSandboxError(err: unknown, reason?: SandboxErrorReason): err is SandboxError {
  return err instanceof SandboxError && (reason === undefined || err.reason === reason);
}
