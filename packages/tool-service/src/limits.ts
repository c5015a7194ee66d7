// The runtime's limits from the [tools] section, the same for every tool service.
import type { ToolsConfig } from '@toolmesh/config';

export interface ToolServiceLimits {
  concurrency: number;
  /** Slots one project may hold while another project is active (optional: no cap). */
  maxProjectInFlight?: number;
  maxCallBytes: number;
  /** tools.max_arguments_depth (optional: 64). */
  maxArgumentsDepth?: number;
  maxResultBytes: number;
  /** Largest arguments kept on the execution row (optional: 8 KiB). */
  executionArgumentsMaxBytes?: number;
  defaultTimeoutMs: number;
  maxTimeoutMs: number;
  ackWaitMs: number;
  /** -1 for unlimited deliveries. */
  maxDeliver: number;
  leaseTtlMs: number;
  retryBaseMs: number;
  retryMaxMs: number;
  persistRetryMaxMs: number;
  /** Approvals: the default wait for a decision (optional: 1 h). */
  approvalTimeoutMs?: number;
  /** How often this instance files approvals past their deadline (optional: 1 s). */
  approvalScanIntervalMs?: number;
  /** How long a project's approval settings are trusted without a change event (30 s). */
  policyCacheTtlMs?: number;
}

export function limitsFromConfig(t: ToolsConfig): ToolServiceLimits {
  return {
    concurrency: t.concurrency,
    maxProjectInFlight: t.max_project_inflight,
    maxCallBytes: t.max_call_bytes,
    maxResultBytes: t.max_result_bytes,
    maxArgumentsDepth: t.max_arguments_depth,
    executionArgumentsMaxBytes: t.execution_arguments_max_bytes,
    defaultTimeoutMs: t.default_timeout_ms,
    maxTimeoutMs: t.max_timeout_ms,
    ackWaitMs: t.ack_wait_ms,
    maxDeliver: t.max_deliver,
    leaseTtlMs: t.lease_ttl_ms,
    retryBaseMs: t.retry_base_ms,
    retryMaxMs: t.retry_max_ms,
    persistRetryMaxMs: t.persist_retry_max_ms,
    approvalTimeoutMs: t.approval_timeout_ms,
    approvalScanIntervalMs: t.approval_scan_interval_ms,
    policyCacheTtlMs: t.registry_cache_ttl_ms,
  };
}
