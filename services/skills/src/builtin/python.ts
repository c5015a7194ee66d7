// builtin.execute_python: a short Python program in a sandbox of the call's own (a fresh one,
// registered like every sandbox so the reaper finds it if this process dies, destroyed when the
// call ends), with no network, a wall-clock limit and an address-space limit of its own
// ([builtin] python_*). The result is the exit code and output tails, as skills.run_cmd's; a
// program that ran out of time fails `timeout`, one that ran out of memory `oom`.
import type { BuiltinConfig } from '@toolmesh/config';
import { ToolError } from '@toolmesh/protocol';
import { ExecutePythonArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsDeps } from '../skills/deps.ts';
import { throwIfCut } from '../skills/limit-error.ts';
import { outputOf } from '../skills/run-cmd.ts';
import { sandboxFor } from '../skills/sessions.ts';

const FINISH_MARGIN_MS = 2_000;

export function pythonTool(deps: SkillsDeps, limits: BuiltinConfig) {
  // Whatever the deployment's reuse mode, each program gets a sandbox of its own.
  const ownSandbox: SkillsDeps = { ...deps, sessions: { ...deps.sessions, reuseMode: 'none' } };
  return defineTool({
    name: 'execute_python',
    description: 'Runs a short Python 3 program in a fresh sandbox.',
    args: ExecutePythonArgs,
    timeoutMs: limits.python_timeout_max_ms + FINISH_MARGIN_MS * 2,
    handler: async (args, ctx) => {
      const asked = args.timeout_ms ?? limits.python_timeout_ms;
      if (asked > limits.python_timeout_max_ms) {
        throw new ToolError(
          `timeout_ms ${asked} exceeds the limit of ${limits.python_timeout_max_ms} ms`,
          { code: 'invalid_arguments', details: { limit_ms: limits.python_timeout_max_ms } },
        );
      }
      const timeoutMs = Math.max(1, Math.min(asked, ctx.deadline - Date.now() - FINISH_MARGIN_MS));
      const lease = await sandboxFor(ownSandbox, ctx, undefined);
      try {
        await lease.sandbox.putFile('main.py', args.code);
        // prlimit lowers the address space of the interpreter alone (never raises a limit the
        // sandbox already has); -I: no user site, no PYTHON* variables, no script folder on path.
        const result = await lease.sandbox.exec(
          {
            argv: [
              'prlimit',
              `--as=${limits.python_memory_bytes}`,
              '--',
              'python3',
              '-I',
              'main.py',
            ],
          },
          {
            timeoutMs,
            signal: ctx.signal,
            ...(args.stdin !== undefined ? { stdin: args.stdin } : {}),
            limits: {
              stdoutBytes: deps.limits.stdoutTailBytes,
              stderrBytes: deps.limits.stderrTailBytes,
            },
          },
        );
        const out = outputOf(result);
        throwIfCut(result, out, timeoutMs, 'the program');
        if (result.exitCode !== 0 && /\bMemoryError\b/.test(result.stderr.text)) {
          throw new ToolError(
            `the program went past its memory limit of ${limits.python_memory_bytes} bytes`,
            {
              code: 'oom',
              details: { ...out, limit: 'memory', limit_bytes: limits.python_memory_bytes },
            },
          );
        }
        return out;
      } finally {
        await lease.release();
      }
    },
  });
}
