// A quota refusal from the store ([quotas], counted in Postgres across instances) as the failed
// result the caller sees: code `quota_exceeded`, with which quota, its limit and the count.
import { ToolError } from '@toolmesh/protocol';
import type { Admission, QuotaRefusal } from '@toolmesh/store';

const WHAT = {
  calls: 'skills-service calls in flight',
  sandboxes: 'live sandboxes',
  running_tasks: 'running async tasks, services and jobs',
} as const satisfies Record<QuotaRefusal['quota'], string>;

export function quotaError(r: QuotaRefusal): ToolError {
  return new ToolError(
    `project is at its quota of ${r.limit} ${WHAT[r.quota]} (${r.current} now); ` +
      'try again once some of them have ended',
    { code: 'quota_exceeded', details: { quota: r.quota, limit: r.limit, current: r.current } },
  );
}

/** The admitted value, or the refusal thrown as `quota_exceeded`. */
export function admitted<T>(a: Admission<T>): T {
  if (!a.admitted) throw quotaError(a);
  return a.value;
}
