// A registry tool's policies: its `options` over the project-wide defaults of [tools]. Options
// were checked when the tool was registered; they are parsed again here because the row may
// predate this version, and a tool whose options no longer parse is refused, not half-applied.
import { ToolOptions, type CostOptions } from '@toolmesh/protocol';
import type { ToolsConfig } from '@toolmesh/config';

export interface RateLimitPolicy {
  perSecond: number;
  burst: number;
  maxWaitMs: number;
}

export interface RetryPolicy {
  max: number;
  baseMs: number;
  maxMs: number;
}

export interface Policies {
  timeoutMs: number | undefined;
  rateLimit: RateLimitPolicy | undefined;
  retries: RetryPolicy;
  cost: CostOptions | undefined;
}

export type PolicyDefaults = Pick<
  ToolsConfig,
  | 'rate_limit_per_minute'
  | 'rate_limit_burst'
  | 'rate_limit_max_wait_ms'
  | 'upstream_retries'
  | 'upstream_retry_base_ms'
  | 'upstream_retry_max_ms'
>;

export function policiesOf(
  options: Record<string, unknown>,
  d: PolicyDefaults,
): { ok: true; policies: Policies } | { ok: false; message: string } {
  const parsed = ToolOptions.safeParse(options);
  if (!parsed.success) {
    return { ok: false, message: parsed.error.issues.map((i) => i.message).join('; ') };
  }
  const o = parsed.data;
  const perMinute = o.rate_limit?.per_minute ?? d.rate_limit_per_minute;
  const baseMs = o.retries?.base_ms ?? d.upstream_retry_base_ms;
  return {
    ok: true,
    policies: {
      timeoutMs: o.timeout_ms,
      rateLimit:
        perMinute > 0
          ? {
              perSecond: perMinute / 60,
              burst: o.rate_limit?.burst ?? d.rate_limit_burst,
              maxWaitMs: o.rate_limit?.max_wait_ms ?? d.rate_limit_max_wait_ms,
            }
          : undefined,
      retries: {
        max: o.retries?.max ?? d.upstream_retries,
        baseMs,
        maxMs: Math.max(baseMs, o.retries?.max_ms ?? d.upstream_retry_max_ms),
      },
      cost: o.cost,
    },
  };
}
