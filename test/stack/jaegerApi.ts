// Reading traces back from Jaeger's query API (its HTTP JSON API, /api/traces), for the trace tests.
import { waitFor } from '../support/testKit';

export interface JaegerSpan {
  traceID: string;
  spanID: string;
  operationName: string;
  processID: string;
  references: { refType: string; spanID: string }[];
  tags: { key: string; value: unknown }[];
  logs: { fields: { key: string; value: unknown }[] }[];
}

export interface JaegerTrace {
  traceID: string;
  spans: JaegerSpan[];
  processes: Record<string, { serviceName: string; tags: { key: string; value: unknown }[] }>;
}

export async function readTrace(queryUrl: string, traceId: string): Promise<JaegerTrace | undefined> {
  const response = await fetch(`${queryUrl}/api/traces/${traceId}`);
  if (!response.ok) return undefined;
  const body = (await response.json()) as { data?: JaegerTrace[] };
  return body.data?.[0];
}

export function spanTag(span: JaegerSpan, key: string): unknown {
  return span.tags.find((t) => t.key === key)?.value;
}

export function spanNames(trace: JaegerTrace | undefined): string[] {
  return (trace?.spans ?? []).map((s) => s.operationName).sort();
}

export function onlySpan(trace: JaegerTrace, name: string): JaegerSpan {
  const found = trace.spans.filter((s) => s.operationName === name);
  if (found.length !== 1)
    throw new Error(`${found.length} spans named ${name}: ${spanNames(trace).join(', ')}`);
  return found[0]!;
}

/** Waits until `read` gives a trace holding a span of each wanted name; on timeout, says what it holds. */
export async function waitForSpans(
  what: string,
  read: () => Promise<JaegerTrace | undefined>,
  wanted: string[],
  timeoutMs = 30_000,
): Promise<JaegerTrace> {
  return waitFor(
    what,
    async () => {
      const trace = await read();
      const names = new Set(trace?.spans.map((s) => s.operationName));
      return wanted.every((name) => names.has(name)) ? trace : undefined;
    },
    timeoutMs,
  ).catch(async (error: unknown) => {
    throw new Error(`${String(error)}; the trace holds: ${JSON.stringify(spanNames(await read()))}`);
  });
}
