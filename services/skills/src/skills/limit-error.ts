// A command the kernel killed for a sandbox limit, as the error code a result carries.
import type { ExecResult } from '@toolmesh/sandbox';

/**
 * The error of a command the kernel killed for a sandbox limit (memory: `oom`; CPU time:
 * `cpu_limit`), else undefined. Checked before the timeout: a command killed for memory or CPU
 * did not run out of time.
 */
export function limitErrorOf(
  r: ExecResult,
): { code: 'oom' | 'cpu_limit'; message: string; limit: 'memory' | 'cpu' } | undefined {
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
    default: {
      const never: never = r.limitExceeded;
      throw new Error(`unknown limit ${String(never)}`);
    }
  }
}
