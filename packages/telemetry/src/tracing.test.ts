// Without an endpoint or a processor no provider is registered: spans are the API's no-op
// spans, nothing is recorded and no traceparent is added to messages.
import { trace } from '@opentelemetry/api';
import { InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace';
import { describe, expect, it } from 'vitest';
import { initTracing, traceHeaders, withSpan } from './tracing.ts';

describe('initTracing', () => {
  it('registers nothing without an endpoint: spans are not recorded, headers stay empty', async () => {
    const tracing = await initTracing({ serviceName: 'quiet', endpoint: '' });
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
    const tracing = await initTracing({
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

  it('marks a failed span with the error code only, never its message', async () => {
    const exporter = new InMemorySpanExporter();
    const tracing = await initTracing({
      serviceName: 'failing',
      spanProcessors: [new SimpleSpanProcessor({ exporter })],
    });
    const err = Object.assign(new Error('connect to postgres://app:hunter2@db failed'), {
      code: 'unavailable',
    });
    await expect(withSpan('hop', {}, () => Promise.reject(err))).rejects.toBe(err);
    await expect(
      withSpan('plain', {}, () => Promise.reject(new TypeError('token sk-live-1 bad'))),
    ).rejects.toThrow(TypeError);
    const [hop, plain] = exporter.getFinishedSpans();
    expect(hop?.status).toEqual({ code: 2, message: 'unavailable' });
    expect(plain?.status).toEqual({ code: 2, message: 'TypeError' });
    expect(JSON.stringify([hop?.events, plain?.events, hop?.attributes])).not.toMatch(
      /hunter2|sk-live-1/,
    );
    await tracing.shutdown();
  });
});
