// The OpenTelemetry SDK set-up, loaded by initTracing only when spans have somewhere to go:
// the provider (resource, parent-based ratio sampler, the processors), the AsyncLocalStorage
// context manager and the W3C propagator, registered globally.
import { context, propagation, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { W3CTraceContextPropagator } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-http';
import { resourceFromAttributes } from '@opentelemetry/resources';
import {
  BatchSpanProcessor,
  ParentBasedSampler,
  TraceIdRatioBasedSampler,
  TracerProvider,
} from '@opentelemetry/sdk-trace';
import { ATTR_SERVICE_NAME, ATTR_SERVICE_INSTANCE_ID } from '@opentelemetry/semantic-conventions';
import type { TracingOptions } from './tracing.ts';

export function registerProvider(o: TracingOptions): TracerProvider {
  const processors = [...(o.spanProcessors ?? [])];
  if (o.endpoint) {
    const url = `${o.endpoint.replace(/\/+$/, '')}/v1/traces`;
    processors.push(new BatchSpanProcessor({ exporter: new OTLPTraceExporter({ url }) }));
  }
  const provider = new TracerProvider({
    resource: resourceFromAttributes({
      [ATTR_SERVICE_NAME]: o.serviceName,
      ...(o.instanceId ? { [ATTR_SERVICE_INSTANCE_ID]: o.instanceId } : {}),
    }),
    sampler: new ParentBasedSampler({ root: new TraceIdRatioBasedSampler(o.sampleRatio ?? 1) }),
    spanProcessors: processors,
  });
  // The global registrations refuse a second registration unless the previous one is removed.
  trace.disable();
  context.disable();
  propagation.disable();
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
  propagation.setGlobalPropagator(new W3CTraceContextPropagator());
  trace.setGlobalTracerProvider(provider);
  return provider;
}
