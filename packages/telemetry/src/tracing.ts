// OpenTelemetry traces of the mesh. Instrumented code only calls `@opentelemetry/api`; without
// a registered provider every span is the API's no-op span, so a process without an `[otel]
// endpoint` pays a function call per hop and nothing more. `initTracing` registers the SDK's
// provider, the AsyncLocalStorage context manager (a span stays current across awaits) and the
// W3C trace-context propagator, which is how a span's context crosses the bus: a `traceparent`
// header on the NATS message, read back by the consumer. The SDK and the exporter are loaded
// (sdk.ts) only when there is somewhere to send spans: a process without, and every user of the
// client SDK, does not pay for loading them.
import {
  INVALID_SPAN_CONTEXT,
  context,
  propagation,
  trace,
  SpanKind,
  SpanStatusCode,
  type Attributes,
  type Context,
  type Span,
} from '@opentelemetry/api';
import type { SpanProcessor } from '@opentelemetry/sdk-trace';

export { SpanKind };
export type { Span };

const TRACER = 'toolmesh';
let enabled = false;
/** What `fn` gets while nothing is recorded: the API's non-recording span, made once. */
const NOT_RECORDING: Span = trace.wrapSpanContext(INVALID_SPAN_CONTEXT);
const NO_HEADERS: Readonly<Record<string, string>> = Object.freeze({});

/** Whether this process records spans (initTracing registered a provider). */
export function tracingEnabled(): boolean {
  return enabled;
}

/** The context a stored `traceparent` names (the current one when it is empty). */
export function contextFromTraceparent(traceparent: string | null | undefined): Context {
  return contextFromHeaders((name) =>
    name === 'traceparent' ? (traceparent ?? undefined) : undefined,
  );
}

export interface TracingOptions {
  serviceName: string;
  instanceId?: string;
  /** The OTLP/HTTP collector's base URL; empty or absent: no exporter. */
  endpoint?: string;
  /** Share of new root traces kept (0-1); children follow their parent's decision. */
  sampleRatio?: number;
  /** Extra processors (tests pass a SimpleSpanProcessor over an InMemorySpanExporter). */
  spanProcessors?: SpanProcessor[];
}

export interface Tracing {
  /** Whether spans are recorded at all (an exporter or a processor is registered). */
  readonly enabled: boolean;
  /** Exports what is buffered and unregisters the provider. */
  shutdown(): Promise<void>;
}

/**
 * Registers the global tracer provider when there is somewhere to send spans; otherwise leaves
 * the API's no-op provider in place. Once per process (a second call replaces the first).
 */
export async function initTracing(o: TracingOptions): Promise<Tracing> {
  if (!o.endpoint && (o.spanProcessors ?? []).length === 0)
    return { enabled: false, shutdown: async () => {} };
  const { registerProvider } = await import('./sdk.ts');
  const provider = registerProvider(o);
  enabled = true;
  return {
    enabled: true,
    shutdown: async () => {
      enabled = false;
      // An unreachable collector loses the last spans; it does not fail the process's stop.
      await provider.shutdown().catch(() => undefined);
      trace.disable();
      context.disable();
      propagation.disable();
    },
  };
}

/** A failure's stable code (`code` of a mesh error), else its class name. */
function errorLabel(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (typeof code === 'string') return code;
  return err instanceof Error ? err.name : 'error';
}

/**
 * Runs `fn` inside a new span (a child of `parent`, or of the current span), ending it when `fn`
 * settles; a thrown error marks the span failed and is rethrown.
 */
export async function withSpan<T>(
  name: string,
  o: { kind?: SpanKind; attributes?: Attributes; parent?: Context },
  fn: (span: Span) => Promise<T>,
): Promise<T> {
  // The path of every hop when no provider is registered: no span, no context switch.
  if (!enabled) return fn(NOT_RECORDING);
  const tracer = trace.getTracer(TRACER);
  const parent = o.parent ?? context.active();
  return tracer.startActiveSpan(
    name,
    { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes ? { attributes: o.attributes } : {}) },
    parent,
    async (span) => {
      try {
        return await fn(span);
      } catch (err) {
        // The error's code or class only: its message may quote a URL with credentials or a
        // driver's account details, and spans leave the process.
        span.setStatus({ code: SpanStatusCode.ERROR, message: errorLabel(err) });
        throw err;
      } finally {
        span.end();
      }
    },
  );
}

/** Starts a span the caller ends (for work that outlives one function, e.g. an HTTP request). */
export function startSpan(
  name: string,
  o: { kind?: SpanKind; attributes?: Attributes; parent?: Context } = {},
): { span: Span; context: Context } {
  const parent = o.parent ?? context.active();
  const span = trace
    .getTracer(TRACER)
    .startSpan(
      name,
      { kind: o.kind ?? SpanKind.INTERNAL, ...(o.attributes ? { attributes: o.attributes } : {}) },
      parent,
    );
  return { span, context: trace.setSpan(parent, span) };
}

/** Runs `fn` with `ctx` as the current context. */
export function withContext<T>(ctx: Context, fn: () => T): T {
  return context.with(ctx, fn);
}

/** The `traceparent` (and `tracestate`) of the current span, for a message's headers. */
export function traceHeaders(ctx: Context = context.active()): Readonly<Record<string, string>> {
  if (!enabled) return NO_HEADERS;
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** The context a message's `traceparent` header names (the current one when it names none). */
export function contextFromHeaders(header: (name: string) => string | undefined): Context {
  if (!enabled) return context.active();
  return propagation.extract(context.active(), undefined, {
    get: (_carrier, key) => header(key),
    keys: () => ['traceparent', 'tracestate'],
  });
}

/** Whether a span is current (a delivery's, a request's), recorded or not. */
export function hasActiveSpan(): boolean {
  return trace.getSpan(context.active()) !== undefined;
}

/** The trace id of the current span, when one is being recorded. */
export function currentTraceId(): string | undefined {
  const sc = trace.getSpan(context.active())?.spanContext();
  return sc && trace.isSpanContextValid(sc) ? sc.traceId : undefined;
}
