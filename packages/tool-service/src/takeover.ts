// What a takeover means for a call's effects. A lease taken over from an expired owner with no
// result card means that owner stopped (crashed, or stalled past its lease) somewhere between
// taking the lease and writing the card: its handler may have run, in part or in full. Running
// it again is safe only for an idempotent tool; for any other, the call ends `interrupted` and
// the caller decides, unless it said up front that a second run is fine (`rerun_on_takeover`).
import {
  statusForCode,
  type ErrorBody,
  type ErrorCode,
  type ToolCall,
  type ToolResultContent,
} from '@toolmesh/protocol';
import type { RunnableTool } from './define.ts';

export function failure(
  code: ErrorCode,
  message: string,
  details?: Record<string, unknown>,
): ToolResultContent {
  const error: ErrorBody = details ? { code, message, details } : { code, message };
  return { status: statusForCode(code), error, duration_ms: 0 };
}

/** The result of a taken-over call that must not run again; undefined when it may. */
export function interruptedOnTakeover(
  tool: RunnableTool,
  call: ToolCall,
): ToolResultContent | undefined {
  if (tool.idempotent !== false || call.rerun_on_takeover === true) return undefined;
  return failure(
    'interrupted',
    `${call.tool_name} is not idempotent and the instance running this call stopped before it finished; it may have had some or all of its effect, so it was not run again. Check its effect, then call again with a new tool_call_id, or send rerun_on_takeover: true to allow a second run.`,
    { rerun_on_takeover: false },
  );
}
