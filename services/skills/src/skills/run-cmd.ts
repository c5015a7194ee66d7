// skills.run_cmd: one command in a sandbox, to completion. The command is a bash script; the
// caller's env values reach it as environment variables, never spliced into its text. Inputs
// are copied in first, outputs collected after; the result keeps the exit code and the tails of
// stdout and stderr whatever the exit code. A command past its time limit is killed with every
// process it started, and the call ends `timeout` with the output it had produced.
import { ToolError } from '@toolmesh/protocol';
import type { ExecResult } from '@toolmesh/sandbox';
import { RunCmdArgs } from '@toolmesh/skills';
import { defineTool } from '@toolmesh/tool-service';
import type { SkillsDeps } from './deps.ts';
import { collectOutputs } from './files.ts';
import { throwIfCut } from './limit-error.ts';
import { prepareCommand } from './prepare.ts';
import { sandboxFor } from './sessions.ts';

/** Time kept back from the call's deadline to collect outputs and write the result. */
const FINISH_MARGIN_MS = 2_000;

export function outputOf(r: ExecResult) {
  return {
    exit_code: r.exitCode,
    signal: r.signal,
    stdout: r.stdout.text,
    stderr: r.stderr.text,
    stdout_truncated: r.stdout.truncated,
    stderr_truncated: r.stderr.truncated,
    stdout_bytes: r.stdout.totalBytes,
    stderr_bytes: r.stderr.totalBytes,
    duration_ms: Math.round(r.durationMs),
    denials: r.denials,
  };
}

export function runCmdTool(deps: SkillsDeps) {
  return defineTool({
    name: 'run_cmd',
    description:
      'Runs a shell command in a sandbox and returns its exit code, output tails and output files.',
    args: RunCmdArgs,
    timeoutMs: deps.limits.runTimeoutMaxMs + FINISH_MARGIN_MS,
    handler: async (args, ctx) => {
      const asked = args.timeout_ms ?? deps.limits.runTimeoutDefaultMs;
      if (asked > deps.limits.runTimeoutMaxMs) {
        throw new ToolError(
          `timeout_ms ${asked} exceeds the limit of ${deps.limits.runTimeoutMaxMs} ms`,
          {
            code: 'invalid_arguments',
            details: { limit_ms: deps.limits.runTimeoutMaxMs },
          },
        );
      }
      const commandTimeout = Math.max(
        1,
        Math.min(asked, ctx.deadline - Date.now() - FINISH_MARGIN_MS),
      );
      const lease = await sandboxFor(deps, ctx, args.session_id);
      try {
        const { placed, base, options } = await prepareCommand(
          deps,
          lease.sandbox,
          ctx.project,
          args,
          ctx,
        );
        const result = await lease.sandbox.exec(
          { shell: args.command },
          { ...options, timeoutMs: commandTimeout, signal: ctx.signal },
        );
        const out = outputOf(result);
        throwIfCut(result, out, commandTimeout);
        const collected = await collectOutputs(
          deps,
          lease.sandbox,
          ctx.project,
          ctx.toolCallId,
          args.outputs ?? [],
          base,
        );
        return {
          ...out,
          skill: placed ? { name: placed.name, version: placed.version } : null,
          workdir: base || '.',
          artifacts: collected.artifacts,
          output_errors: collected.errors,
        };
      } finally {
        await lease
          .release()
          .catch((err: unknown) => ctx.logger.warn({ err }, 'releasing the sandbox failed'));
      }
    },
  });
}
