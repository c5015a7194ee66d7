export {
  initTracing,
  withSpan,
  startSpan,
  withContext,
  traceHeaders,
  contextFromHeaders,
  currentTraceId,
  contextFromTraceparent,
  hasActiveSpan,
  tracingEnabled,
  SpanKind,
} from './tracing.ts';
export type { Span, Tracing, TracingOptions } from './tracing.ts';
export {
  metrics,
  meshRegistry,
  collectProcessMetrics,
  renderMetrics,
  metricsContentType,
} from './metrics.ts';
