// A command the kernel killed for a sandbox limit, as the error code a result carries.
import { ToolError } from '@toolmesh/protocol';
import type { ExecResult } from '@toolmesh/sandbox';

/**
 * The error of a command cut by a sandbox limit (memory: `oom`; CPU time: `cpu_limit`; disk:
 * `disk_full`), else undefined. Checked before the timeout: a command killed for memory or CPU
 * did not run out of time.
 */
export function limitErrorOf(
  r: ExecResult,
):
  | { code: 'oom' | 'cpu_limit' | 'disk_full'; message: string; limit: 'memory' | 'cpu' | 'disk' }
  | undefined {
  switch (r.limitExceeded) {
    case undefined:
      return undefined;
    case 'memory':
      return {
        code: 'oom',
        message: 'the command went past the memory limit of its sandbox and was killed',
        limit: 'memory',
      };
    case 'cpu':
      return {
        code: 'cpu_limit',
        message: 'the command used more CPU time than its sandbox allows and was killed',
        limit: 'cpu',
      };
    case 'disk':
      return {
        code: 'disk_full',
        message:
          "the command would take its sandbox's files past the disk limit: its write was refused or it was killed",
        limit: 'disk',
      };
    default: {
      const never: never = r.limitExceeded;
      throw new Error(`unknown limit ${String(never)}`);
    }
  }
}

/**
 * Throws the call's failure for a command that did not end on its own: killed for a sandbox
 * limit (`oom`, `cpu_limit`) or past its time limit (`timeout`), with the output it had produced.
 */
export function throwIfCut(
  r: ExecResult,
  out: Record<string, unknown>,
  timeoutMs: number,
  what = 'the command',
): void {
  const limit = limitErrorOf(r);
  if (limit !== undefined) {
    throw new ToolError(limit.message, {
      code: limit.code,
      details: { ...out, limit: limit.limit },
    });
  }
  if (r.timedOut) {
    throw new ToolError(`${what} ran past its time limit of ${timeoutMs} ms and was killed`, {
      code: 'timeout',
      details: { ...out, timeout_ms: timeoutMs },
    });
  }
}
