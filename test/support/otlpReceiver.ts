// An OTLP/HTTP trace receiver in the test process, for the trace tests: a loopback server that takes what an
// OpenTelemetry exporter POSTs to <endpoint>/v1/traces, decodes it with the very protobuf types the exporter
// encodes with (@opentelemetry/otlp-transformer's generated root, at the exporter's version), in both OTLP/HTTP
// encodings (application/x-protobuf, application/json), and keeps every span with its resource. A body it
// cannot decode is answered 400 and kept as a failure, which the waits below report.
import { createServer, type IncomingMessage } from 'node:http';
import type { AddressInfo } from 'node:net';
import { gunzipSync } from 'node:zlib';
import otlpRoot from '@opentelemetry/otlp-transformer/build/src/generated/root';
import { waitFor } from './testKit';

/** The part of a protobufjs static message type used here. */
interface MessageType {
  decode(bytes: Uint8Array): object;
  encode(message: object): { finish(): Uint8Array };
  fromObject(object: object): object;
  toObject(message: object, options: { longs: typeof String; enums: typeof Number }): unknown;
}

// The shipped typings say only `Root`; the generated module is a plain tree of namespaces.
const traceService = (
  otlpRoot as unknown as {
    opentelemetry: {
      proto: {
        collector: {
          trace: { v1: Record<'ExportTraceServiceRequest' | 'ExportTraceServiceResponse', MessageType> };
        };
      };
    };
  }
).opentelemetry.proto.collector.trace.v1;

/** OTLP's SpanKind, by its number on the wire. */
const SPAN_KINDS = ['unspecified', 'internal', 'server', 'client', 'producer', 'consumer'] as const;

export interface ReceivedSpan {
  /** Hex, as log lines and viewers print them. */
  traceId: string;
  spanId: string;
  /** '' for a root span. */
  parentSpanId: string;
  name: string;
  kind: (typeof SPAN_KINDS)[number];
  /** Attribute values as JavaScript values: int64 as a number, arrays and key-value lists unfolded. */
  attributes: Record<string, unknown>;
  /** The resource's attributes (service.name, OTEL_RESOURCE_ATTRIBUTES, the SDK's own). */
  resource: Record<string, unknown>;
  status: { code: number; message: string };
}

export interface ReceivedExport {
  method: string;
  path: string;
  contentType: string;
  spans: ReceivedSpan[];
}

export interface OtlpReceiver {
  /** The base URL: what OTEL_EXPORTER_OTLP_ENDPOINT is set to (spans then go to `<it>/v1/traces`). */
  endpoint: string;
  /** Every export request decoded, in arrival order. */
  exports: ReceivedExport[];
  /** Requests that could not be decoded: what they were and why. */
  failures: string[];
  spans(): ReceivedSpan[];
  /** Every span of one trace, from any service. */
  trace(traceId: string): ReceivedSpan[];
  /** The newest trace holding a span of `service` with every attribute given, or [] if none. */
  traceWith(service: string, attributes: Record<string, unknown>): ReceivedSpan[];
  close(): Promise<void>;
}

export async function startOtlpReceiver(): Promise<OtlpReceiver> {
  const exports: ReceivedExport[] = [];
  const failures: string[] = [];
  const server = createServer((request, response) => {
    readBody(request).then(
      (body) => {
        const contentType = (request.headers['content-type'] ?? '').split(';')[0]?.trim() ?? '';
        const json = contentType === 'application/json';
        try {
          if (request.method !== 'POST') throw new Error(`method ${request.method ?? ''}`);
          if (!json && contentType !== 'application/x-protobuf')
            throw new Error(`content type ${contentType}`);
          const message = json ? fromJson(body) : traceService.ExportTraceServiceRequest.decode(body);
          exports.push({
            method: request.method,
            path: request.url ?? '',
            contentType,
            spans: unfold(message),
          });
        } catch (error) {
          failures.push(`${request.method ?? ''} ${request.url ?? ''} (${contentType}): ${String(error)}`);
          response.writeHead(400).end();
          return;
        }
        // An empty ExportTraceServiceResponse: everything accepted.
        if (json) response.writeHead(200, { 'content-type': 'application/json' }).end('{}');
        else
          response
            .writeHead(200, { 'content-type': 'application/x-protobuf' })
            .end(traceService.ExportTraceServiceResponse.encode({}).finish());
      },
      (error: unknown) => {
        failures.push(`reading a request: ${String(error)}`);
        response.writeHead(400).end();
      },
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const spans = () => exports.flatMap((received) => received.spans);
  const trace = (traceId: string) => spans().filter((span) => span.traceId === traceId);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    exports,
    failures,
    spans,
    trace,
    traceWith(service, attributes) {
      const matching = spans().filter(
        (span) =>
          span.resource['service.name'] === service &&
          Object.entries(attributes).every(([key, value]) => span.attributes[key] === value),
      );
      const newest = matching.at(-1);
      return newest === undefined ? [] : trace(newest.traceId);
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** The one span of that name; throws naming what there is otherwise. */
export function onlySpan(spans: ReceivedSpan[], name: string): ReceivedSpan {
  const found = spans.filter((span) => span.name === name);
  if (found.length !== 1)
    throw new Error(`${found.length} spans named ${name}: ${spanNames(spans).join(', ')}`);
  return found[0]!;
}

export function spanNames(spans: ReceivedSpan[]): string[] {
  return spans.map((span) => span.name).sort();
}

/** Waits until `read` gives spans with each wanted name; on timeout, says what it holds and what failed. */
export async function waitForSpans(
  receiver: OtlpReceiver,
  what: string,
  read: () => ReceivedSpan[],
  wanted: string[],
  timeoutMs = 30_000,
): Promise<ReceivedSpan[]> {
  return waitFor(
    what,
    () => {
      const spans = read();
      const names = new Set(spans.map((span) => span.name));
      return Promise.resolve(wanted.every((name) => names.has(name)) ? spans : undefined);
    },
    timeoutMs,
  ).catch((error: unknown) => {
    throw new Error(
      `${String(error)}; it holds: ${JSON.stringify(spanNames(read()))}; failed requests: ${JSON.stringify(receiver.failures)}`,
    );
  });
}

async function readBody(request: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = [];
  for await (const chunk of request) chunks.push(chunk as Buffer);
  const body = Buffer.concat(chunks);
  return request.headers['content-encoding'] === 'gzip' ? gunzipSync(body) : body;
}

/**
 * OTLP/JSON is the protobuf message in proto3's JSON mapping, except that trace and span ids are hex (not
 * base64); with the ids turned to base64, the message type itself reads it.
 */
function fromJson(body: Buffer): object {
  const parsed = JSON.parse(body.toString('utf8')) as unknown;
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    throw new Error('not a JSON object');
  const hexToBase64 = (value: unknown) =>
    typeof value === 'string' && /^([0-9a-f]{2})*$/i.test(value)
      ? Buffer.from(value, 'hex').toString('base64')
      : value;
  const withIds = JSON.parse(JSON.stringify(parsed), (key, value: unknown) =>
    key === 'traceId' || key === 'spanId' || key === 'parentSpanId' ? hexToBase64(value) : value,
  ) as object;
  return traceService.ExportTraceServiceRequest.fromObject(withIds);
}

interface AnyValue {
  stringValue?: string;
  boolValue?: boolean;
  intValue?: string;
  doubleValue?: number;
  arrayValue?: { values?: AnyValue[] };
  kvlistValue?: { values?: KeyValue[] };
  bytesValue?: Uint8Array;
}
interface KeyValue {
  key: string;
  value?: AnyValue;
}
interface DecodedRequest {
  resourceSpans?: {
    resource?: { attributes?: KeyValue[] };
    scopeSpans?: {
      spans?: {
        traceId: Uint8Array;
        spanId: Uint8Array;
        parentSpanId?: Uint8Array;
        name: string;
        kind?: number;
        attributes?: KeyValue[];
        status?: { code?: number; message?: string };
      }[];
    }[];
  }[];
}

function unfold(message: object): ReceivedSpan[] {
  const request = traceService.ExportTraceServiceRequest.toObject(message, {
    longs: String,
    enums: Number,
  }) as DecodedRequest;
  return (request.resourceSpans ?? []).flatMap((resourceSpans) => {
    const resource = attributeMap(resourceSpans.resource?.attributes);
    return (resourceSpans.scopeSpans ?? []).flatMap((scopeSpans) =>
      (scopeSpans.spans ?? []).map((span) => ({
        traceId: hex(span.traceId),
        spanId: hex(span.spanId),
        parentSpanId: hex(span.parentSpanId),
        name: span.name,
        kind: SPAN_KINDS[span.kind ?? 0] ?? 'unspecified',
        attributes: attributeMap(span.attributes),
        resource,
        status: { code: span.status?.code ?? 0, message: span.status?.message ?? '' },
      })),
    );
  });
}

function hex(bytes: Uint8Array | undefined): string {
  return bytes === undefined ? '' : Buffer.from(bytes).toString('hex');
}

function attributeMap(attributes: KeyValue[] | undefined): Record<string, unknown> {
  return Object.fromEntries(
    (attributes ?? []).map((attribute) => [attribute.key, anyValue(attribute.value)]),
  );
}

function anyValue(value: AnyValue | undefined): unknown {
  if (value === undefined) return undefined;
  if (value.stringValue !== undefined) return value.stringValue;
  if (value.boolValue !== undefined) return value.boolValue;
  if (value.intValue !== undefined) return Number(value.intValue);
  if (value.doubleValue !== undefined) return value.doubleValue;
  if (value.arrayValue !== undefined) return (value.arrayValue.values ?? []).map(anyValue);
  if (value.kvlistValue !== undefined) return attributeMap(value.kvlistValue.values);
  if (value.bytesValue !== undefined) return hex(value.bytesValue);
  return undefined;
}
