// Without an endpoint or a processor no provider is registered: spans are the API's no-op
// spans, nothing is recorded and no traceparent is added to messages.
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { initTracing, traceHeaders, withSpan } from './tracing.ts';

describe('initTracing', () => {
  it('registers nothing without an endpoint: spans are not recorded, headers stay empty', async () => {
    const tracing = initTracing({ serviceName: 'quiet', endpoint: '' });
    expect(tracing.enabled).toBe(false);
    await withSpan('hop', {}, (span) => {
      expect(span.isRecording()).toBe(false);
      expect(traceHeaders()).toEqual({});
      return Promise.resolve();
    });
    await tracing.shutdown();
  });

  it('with a processor, a span and its child share a trace and the child carries its traceparent', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = initTracing({
      serviceName: 'loud',
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    expect(tracing.enabled).toBe(true);
    let header = '';
    await withSpan('outer', {}, () =>
      withSpan('inner', {}, (span) => {
        header = traceHeaders()['traceparent'] ?? '';
        expect(header).toBe(`00-${span.spanContext().traceId}-${span.spanContext().spanId}-01`);
        return Promise.resolve();
      }),
    );
    const [inner, outer] = exporter.getFinishedSpans();
    expect([inner?.name, outer?.name]).toEqual(['inner', 'outer']);
    expect(inner?.parentSpanContext?.spanId).toBe(outer?.spanContext().spanId);
    await tracing.shutdown();
    expect(trace.getTracer('x').startSpan('after').isRecording()).toBe(false);
  });
});
