// The trace tests' receiver (test/support/otlpReceiver.ts) reads what OpenTelemetry really sends: the same
// spans exported by the worker's own exporter (OTLP/HTTP protobuf) and serialized as OTLP/JSON by the
// transformer the JSON exporter uses come out field for field alike, with ids, parent links, kinds, every
// attribute type and the resource as they were made.
import { SpanKind, SpanStatusCode, context, trace } from '@opentelemetry/api';
import { ExportResultCode } from '@opentelemetry/core';
import { OTLPTraceExporter } from '@opentelemetry/exporter-trace-otlp-proto';
import { JsonTraceSerializer } from '@opentelemetry/otlp-transformer';
import { Resource } from '@opentelemetry/resources';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { onlySpan, startOtlpReceiver, type OtlpReceiver } from '../support/otlpReceiver';

let receiver: OtlpReceiver;
let spans: ReadableSpan[];

beforeAll(async () => {
  receiver = await startOtlpReceiver();
  const memory = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({
    resource: new Resource({ 'service.name': 'receiver-test', 'deployment.environment': 'mail ops' }),
  });
  provider.addSpanProcessor(new SimpleSpanProcessor(memory));
  const tracer = provider.getTracer('receiver-test');
  const parent = tracer.startSpan('RunActivity:sendOrderMail');
  const child = tracer.startSpan(
    'mail.http.request',
    {
      kind: SpanKind.CLIENT,
      attributes: {
        'mail.provider': 'generic',
        'http.response.status_code': 202,
        'mail.retry': false,
        'mail.share': 0.25,
        'mail.tags': ['a', 'b'],
      },
    },
    trace.setSpan(context.active(), parent),
  );
  child.setStatus({ code: SpanStatusCode.ERROR, message: 'unknown' });
  child.end();
  parent.end();
  spans = memory.getFinishedSpans();
  await provider.shutdown();
});

afterAll(async () => {
  await receiver?.close();
});

it('decodes the OTLP exporter’s protobuf and OTLP/JSON alike: ids, parent, kind, status, attributes, resource', async () => {
  const exporter = new OTLPTraceExporter({ url: `${receiver.endpoint}/v1/traces` });
  const result = await new Promise<{ code: ExportResultCode }>((resolve) => exporter.export(spans, resolve));
  expect(result.code).toBe(ExportResultCode.SUCCESS);
  await exporter.shutdown();
  const response = await fetch(`${receiver.endpoint}/v1/traces`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JsonTraceSerializer.serializeRequest(spans) ?? new Uint8Array(),
  });
  expect(response.status).toBe(200);
  await response.body?.cancel();

  expect(receiver.failures).toEqual([]);
  expect(receiver.exports.map(({ method, path, contentType }) => ({ method, path, contentType }))).toEqual([
    { method: 'POST', path: '/v1/traces', contentType: 'application/x-protobuf' },
    { method: 'POST', path: '/v1/traces', contentType: 'application/json' },
  ]);
  const [protobuf, json] = receiver.exports.map((received) => received.spans);
  expect(json).toEqual(protobuf);

  const parent = spans.find((span) => span.name === 'RunActivity:sendOrderMail')!;
  const request = onlySpan(protobuf!, 'mail.http.request');
  expect(request).toEqual({
    traceId: parent.spanContext().traceId,
    spanId: spans.find((span) => span.name === 'mail.http.request')!.spanContext().spanId,
    parentSpanId: parent.spanContext().spanId,
    name: 'mail.http.request',
    kind: 'client',
    attributes: {
      'mail.provider': 'generic',
      'http.response.status_code': 202,
      'mail.retry': false,
      'mail.share': 0.25,
      'mail.tags': ['a', 'b'],
    },
    resource: expect.objectContaining({
      'service.name': 'receiver-test',
      'deployment.environment': 'mail ops',
    }) as unknown,
    status: { code: 2, message: 'unknown' },
  });
  expect(onlySpan(protobuf!, 'RunActivity:sendOrderMail')).toMatchObject({
    parentSpanId: '',
    kind: 'internal',
  });
  expect(receiver.trace(parent.spanContext().traceId)).toHaveLength(4);
  expect(receiver.traceWith('receiver-test', { 'mail.provider': 'generic' })).toHaveLength(4);
  expect(receiver.traceWith('another-service', { 'mail.provider': 'generic' })).toEqual([]);
});

it('answers 400 to what is not OTLP, and keeps it as a failure', async () => {
  const before = receiver.exports.length;
  for (const [contentType, body] of [
    ['application/x-protobuf', 'not protobuf \u00ff\u00ff\u00ff'],
    ['application/json', '[1, 2]'],
    ['text/plain', 'hello'],
  ] as const) {
    const response = await fetch(`${receiver.endpoint}/v1/traces`, {
      method: 'POST',
      headers: { 'content-type': contentType },
      body,
    });
    expect(response.status, contentType).toBe(400);
    await response.body?.cancel();
  }
  expect(receiver.exports).toHaveLength(before);
  expect(receiver.failures).toHaveLength(3);
});
