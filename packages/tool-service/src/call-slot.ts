// The per-project quota of calls in flight (state.call_slots, shared by every instance and every
// service on one store): a call takes a slot before its handler runs, or ends quota_exceeded.
import type { CallsStore, RegistryStore } from '@toolmesh/store';
import type { ToolResultContent } from '@toolmesh/protocol';
import type { CallIds } from './stages/intake.ts';
import { failure } from './takeover.ts';

/** Added to a call's deadline to make its quota slot's expiry. */
const CALL_SLOT_MARGIN_MS = 60_000;

/** Takes a slot for the call; the failed result to file instead when the project is full. */
export async function takeCallSlot(
  store: CallsStore & RegistryStore,
  ids: CallIds,
  instanceId: string,
  timeoutMs: number,
  quota: number,
): Promise<ToolResultContent | undefined> {
  const admission = await store.quotas.takeCall(
    {
      projectId: ids.project,
      toolCallId: ids.toolCallId,
      instanceId,
      // A slot outlives its call only when this instance dies mid-call.
      ttlMs: timeoutMs + CALL_SLOT_MARGIN_MS,
    },
    quota,
  );
  if (admission.admitted) return undefined;
  const { limit, current } = admission;
  return failure(
    'quota_exceeded',
    `project is at its quota of ${limit} calls in flight (${current} now); try again once some of them have ended`,
    { quota: 'calls', limit, current },
  );
}
