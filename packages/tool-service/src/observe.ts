// What a tool call leaves behind for operators: a span per hop (lease, handler, card write)
// under the consumer span of its delivery, and its count and duration by tool and status.
import type { ToolResultContent } from '@toolmesh/protocol';
import { metrics, withSpan } from '@toolmesh/telemetry';
import type { CallIds } from './stages/intake.ts';

/** Runs one hop of a call in a span carrying the call's ids. */
export function traced<T>(name: string, ids: CallIds, fn: () => Promise<T>): Promise<T> {
  return withSpan(
    name,
    {
      attributes: {
        'toolmesh.project': ids.project,
        'toolmesh.tool': `${ids.target}.${ids.tool}`,
        'toolmesh.tool_call_id': ids.toolCallId,
      },
    },
    fn,
  );
}

/** Counts a call whose card was written now (a re-emitted result is not counted twice). */
export function countResult(ids: CallIds, content: ToolResultContent): void {
  const labels = { tool: `${ids.target}.${ids.tool}`, status: content.status };
  metrics.toolCalls.inc(labels);
  metrics.toolCallDuration.observe(labels, content.duration_ms / 1000);
}
