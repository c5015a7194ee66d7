// `toolmesh call <tool> --args '{...}'`: publishes a tool call over NATS with the client SDK and
// waits for its result event (a spinner on stderr meanwhile), or with --no-wait prints the
// tool call id at once. The exit code follows the result's status.
import yoctoSpinner from 'yocto-spinner';
import {
  createClient,
  PublishOutcomeUnknownError,
  ResultWaitTimeoutError,
  type ToolResult,
} from '@toolmesh/client';
import { CallContext, errorCodeOf, splitToolName } from '@toolmesh/protocol';
import type { Context } from '../context.ts';
import { CliError, ExitCode, usageError } from '../exit.ts';
import { printJson, printLine } from '../output.ts';
import { projectOf } from '../settings.ts';
import { intOption, jsonObject } from './parse.ts';

export interface CallFlags {
  args?: string;
  channel: string;
  wait: boolean;
  timeoutMs?: string;
  waitMs?: string;
  id?: string;
  session?: string;
  metadata?: string;
}

const exitOfStatus = {
  succeeded: ExitCode.ok,
  failed: ExitCode.failed,
  canceled: ExitCode.failed,
  timeout: ExitCode.timeout,
} as const satisfies Record<ToolResult['status'], ExitCode>;

/** --session and --metadata as the call's context, checked here so a bad one is a usage error. */
function callContext(flags: CallFlags): CallContext | undefined {
  if (flags.session === undefined && flags.metadata === undefined) return undefined;
  const parsed = CallContext.safeParse({
    ...(flags.session !== undefined ? { session_id: flags.session } : {}),
    ...(flags.metadata !== undefined ? { metadata: jsonObject(flags.metadata, '--metadata') } : {}),
  });
  if (!parsed.success) {
    const first = parsed.error.issues[0];
    const field = first?.path[0] === 'session_id' ? '--session' : '--metadata';
    throw usageError(`${field}: ${first?.message ?? 'invalid'}`);
  }
  return parsed.data;
}

export async function callCommand(ctx: Context, tool: string, flags: CallFlags): Promise<number> {
  const project = projectOf(ctx.settings);
  try {
    splitToolName(tool);
  } catch {
    throw usageError(`${JSON.stringify(tool)} is not a tool name: expected <target>.<tool>`);
  }
  const args = flags.args === undefined ? {} : jsonObject(flags.args, '--args');
  const timeoutMs = intOption(flags.timeoutMs, '--timeout-ms');
  const waitMs = intOption(flags.waitMs, '--wait-ms');
  const context = callContext(flags);
  const nc = await ctx.nats();
  const credentialId = ctx.busCredentialId();
  const client = createClient({
    nc,
    root: ctx.settings.root,
    ...(credentialId !== undefined ? { credentialId } : {}),
  });
  const req = {
    project,
    channel: flags.channel,
    tool,
    arguments: args,
    ...(flags.id !== undefined ? { toolCallId: flags.id } : {}),
    ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    ...(context !== undefined ? { context } : {}),
  };

  try {
    if (!flags.wait) {
      const sent = await client.publishToolCall(req);
      if (ctx.settings.json)
        printJson(ctx.io, {
          tool_call_id: sent.toolCallId,
          subject: sent.subject,
          duplicate: sent.duplicate,
        });
      else printLine(ctx.io, sent.toolCallId);
      return ExitCode.ok;
    }
    const spinner =
      !ctx.settings.json && (ctx.io.stderr as { isTTY?: boolean }).isTTY
        ? yoctoSpinner({ text: `calling ${tool}`, stream: ctx.io.stderr }).start()
        : undefined;
    let result: ToolResult;
    try {
      result = await client.callTool(req, {
        signal: ctx.signal,
        ...(waitMs !== undefined ? { waitMs } : {}),
      });
    } finally {
      spinner?.stop();
    }
    if (ctx.settings.json) printJson(ctx.io, result);
    else printResult(ctx, result);
    return exitOfStatus[result.status];
  } catch (err) {
    if (err instanceof CliError) throw err;
    if (ctx.signal.aborted) {
      throw new CliError(ExitCode.interrupted, 'interrupted', 'interrupted; the call goes on', {
        cause: err,
      });
    }
    if (err instanceof ResultWaitTimeoutError) {
      throw new CliError(ExitCode.timeout, 'timeout', err.message, { cause: err });
    }
    if (err instanceof PublishOutcomeUnknownError) {
      // The call may run: a retry must name it, or it would run a second time.
      throw new CliError(
        ExitCode.connection,
        'outcome_unknown',
        `the call ${err.toolCallId} was sent but NATS did not acknowledge it: it may run. Retry with --id ${err.toolCallId} (it never runs twice), not without it`,
        { cause: err },
      );
    }
    const code = errorCodeOf(err);
    if (code === 'invalid_id' || code === 'invalid_message') {
      throw new CliError(ExitCode.usage, code, (err as Error).message, { cause: err });
    }
    throw new CliError(ExitCode.connection, code ?? 'unavailable', (err as Error).message, {
      cause: err,
    });
  } finally {
    await client.close();
  }
}

function printResult(ctx: Context, r: ToolResult): void {
  const { content } = r;
  if (r.status === 'succeeded') {
    printLine(ctx.io, JSON.stringify(content.result ?? null, null, 2));
    ctx.io.stderr.write(
      `${r.tool_name} succeeded in ${Math.round(content.duration_ms)} ms (card ${r.card_id})\n`,
    );
    return;
  }
  const error = content.error ? `${content.error.code}: ${content.error.message}` : r.status;
  ctx.io.stderr.write(`${r.tool_name} ${r.status}: ${error} (card ${r.card_id})\n`);
  if (content.result !== undefined) printLine(ctx.io, JSON.stringify(content.result, null, 2));
}
