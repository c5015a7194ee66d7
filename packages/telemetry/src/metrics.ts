// The Prometheus metric families of the mesh, one registry per process. Every process serves
// this registry at GET /metrics (the api beside its HTTP families, the others on their health
// server); a family a process never touches is still listed, with no samples, so a dashboard
// query never fails for want of a name. Label values are bounded: tool names, statuses, kinds.
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';

export const meshRegistry = new Registry();

const SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 10, 60, 300];
const registers = [meshRegistry];

export const metrics = {
  toolCalls: new Counter({
    name: 'toolmesh_tool_calls_total',
    help: 'Tool calls finished by a tool service, by tool and result status',
    labelNames: ['tool', 'status'] as const,
    registers,
  }),
  toolCallDuration: new Histogram({
    name: 'toolmesh_tool_call_duration_seconds',
    help: 'Time from delivery to result card of a tool call, by tool and status',
    labelNames: ['tool', 'status'] as const,
    buckets: SECONDS,
    registers,
  }),
  leaseTakeovers: new Counter({
    name: 'toolmesh_lease_takeovers_total',
    help: 'Leases of tool calls taken over from a stalled or crashed owner',
    labelNames: ['service'] as const,
    registers,
  }),
  redeliveries: new Counter({
    name: 'toolmesh_redeliveries_total',
    help: 'JetStream messages delivered more than once, by durable consumer',
    labelNames: ['consumer'] as const,
    registers,
  }),
  sandboxesCreated: new Counter({
    name: 'toolmesh_sandboxes_created_total',
    help: 'Sandboxes created (or resumed from the warm pool), by provider',
    labelNames: ['provider'] as const,
    registers,
  }),
  sandboxesActive: new Gauge({
    name: 'toolmesh_sandboxes_active',
    help: 'Sandboxes this process holds open, by provider',
    labelNames: ['provider'] as const,
    registers,
  }),
  openapiImportsRunning: new Gauge({
    name: 'toolmesh_openapi_imports_running',
    help: 'OpenAPI imports this api process is preparing in worker threads right now',
    registers,
  }),
  openapiImportsRefused: new Counter({
    name: 'toolmesh_openapi_imports_refused_total',
    help: 'OpenAPI imports refused for a budget (depth, operations, expansion, time, heap, busy), by code',
    labelNames: ['code'] as const,
    registers,
  }),
  sandboxExecDuration: new Histogram({
    name: 'toolmesh_sandbox_exec_duration_seconds',
    help: 'Duration of commands run in sandboxes, by provider and outcome',
    labelNames: ['provider', 'outcome'] as const,
    buckets: SECONDS,
    registers,
  }),
  reaperPasses: new Counter({
    name: 'toolmesh_reaper_passes_total',
    help: 'Passes of a sandbox reaper, by reaper and outcome',
    labelNames: ['reaper', 'outcome'] as const,
    registers,
  }),
  reaperReaped: new Counter({
    name: 'toolmesh_reaper_sandboxes_reaped_total',
    help: 'Sandboxes a reaper killed or cleaned up, by reaper',
    labelNames: ['reaper'] as const,
    registers,
  }),
  agentSteps: new Counter({
    name: 'toolmesh_agent_steps_total',
    help: 'Agent steps run by the worker, by outcome',
    labelNames: ['outcome'] as const,
    registers,
  }),
  modelRequestDuration: new Histogram({
    name: 'toolmesh_model_request_duration_seconds',
    help: 'Latency of model (LLM) requests, by model and outcome',
    labelNames: ['model', 'outcome'] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120],
    registers,
  }),
  modelTokens: new Counter({
    name: 'toolmesh_model_tokens_total',
    help: 'Tokens reported by the model, by model and kind (input, output)',
    labelNames: ['model', 'kind'] as const,
    registers,
  }),
};

let processMetrics = false;

/** Adds the default process families (CPU, memory, event loop lag) once per process. */
export function collectProcessMetrics(): void {
  if (processMetrics) return;
  processMetrics = true;
  collectDefaultMetrics({ register: meshRegistry });
}

/** The text exposition of the mesh registry (and of `extra` registries before it). */
export async function renderMetrics(extra: readonly Registry[] = []): Promise<string> {
  const parts = await Promise.all([...extra, meshRegistry].map((r) => r.metrics()));
  return parts.join('\n');
}

export const metricsContentType = meshRegistry.contentType;
