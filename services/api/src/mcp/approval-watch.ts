// The facade's second way to learn that a call waits for a person: the approval row itself.
// The `awaiting_approval` progress event that normally tells it is core NATS: lost on a
// reconnect, and never sent again for a call that was already parked when the request began
// (a re-send of a keyed call). A lost event must not leave an eliciting client unasked.
import type { CallsStore, ToolRecord } from '@toolmesh/store';
import type { ToolProgressEvent } from '@toolmesh/protocol';

/** When the row is looked up (ms into the wait); later ones spaced out to keep a long call cheap. */
const APPROVAL_CHECKS_MS = [1_000, 4_000, 10_000, 30_000];
const APPROVAL_CHECK_EVERY_MS = 30_000;

/** What the watch needs of the call. */
export interface WatchedCall {
  project: string;
  tool: Pick<ToolRecord, 'name'>;
  onProgress?: ((ev: ToolProgressEvent) => void) | undefined;
}

/**
 * Passes a pending approval of the call to onProgress as its `awaiting_approval` event, when
 * that event has not come over the bus; once per approval (ids told either way are in `seen`).
 */
export function watchApproval(
  store: CallsStore,
  call: WatchedCall,
  id: string,
  seen: Set<string>,
): () => void {
  const onProgress = call.onProgress;
  if (!onProgress) return () => undefined;
  let timer: NodeJS.Timeout | undefined;
  let stopped = false;
  const schedule = (n: number) => {
    const at = APPROVAL_CHECKS_MS[n];
    const prev = n === 0 ? 0 : (APPROVAL_CHECKS_MS[n - 1] ?? 0);
    const delay = at === undefined ? APPROVAL_CHECK_EVERY_MS : at - prev;
    timer = setTimeout(() => void check(n), delay);
    timer.unref();
  };
  const check = async (n: number) => {
    const a = await store.approvals.forCall(call.project, id).catch(() => undefined);
    if (stopped) return;
    if (a?.status === 'pending' && !seen.has(a.approval_id)) {
      seen.add(a.approval_id);
      onProgress({
        v: 1,
        tool_call_id: id,
        tool_name: call.tool.name,
        at: new Date().toISOString(),
        detail: {
          status: 'awaiting_approval',
          approval_id: a.approval_id,
          expires_at: a.expires_at.toISOString(),
        },
      });
    }
    schedule(n + 1);
  };
  schedule(0);
  return () => {
    stopped = true;
    clearTimeout(timer);
  };
}
