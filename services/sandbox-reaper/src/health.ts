// What the reaper's /healthz says: the last pass (when, what it did) and the totals since start;
// 503 once no pass has ended for three intervals. Served by @toolmesh/service's health server.
import type { HealthReport } from '@toolmesh/service';
import type { PassSummary } from './reaper.ts';

export interface HealthState {
  readonly instanceId: string;
  readonly startedAt: Date;
  lastPassAt: Date | undefined;
  lastPass: PassSummary | undefined;
  lastError: string | undefined;
  passes: number;
  totals: { taken: number; destroyed: number; failed: number };
}

/** The body of /healthz: healthy while passes keep coming (none ended for three intervals:
 * a pass stuck on a hung provider or database). */
export function reaperHealth(s: HealthState, intervalMs: number): HealthReport {
  const since = (s.lastPassAt ?? s.startedAt).getTime();
  return {
    ok: Date.now() - since <= 3 * intervalMs,
    status: 'stale',
    body: {
      instance_id: s.instanceId,
      started_at: s.startedAt.toISOString(),
      last_pass_at: s.lastPassAt?.toISOString() ?? null,
      last_pass: s.lastPass ?? null,
      last_error: s.lastError ?? null,
      passes: s.passes,
      totals: s.totals,
    },
  };
}
