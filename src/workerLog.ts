// One JSON line per entry, the SDK's and the worker's own: the default's dozen util.inspect lines split in
// a log pipeline (docs/benchmarks.md).
import { types } from 'node:util';
import { isSpanContextValid, trace } from '@opentelemetry/api';
import { DefaultLogger, type LogEntry } from '@temporalio/worker';

/** Never throws: a throw in a `log` call would fail the task. */
export function jsonLogLine(entry: LogEntry): string {
  const head = {
    time: new Date(Number(entry.timestampNanos / 1_000_000n)).toISOString(),
    level: entry.level.toLowerCase(),
    message: entry.message,
  };
  try {
    // A field of the entry named like one of the head's does not replace it.
    return JSON.stringify(Object.assign({}, head, entry.meta, head), plainValue);
  } catch (error) {
    // A field JSON cannot hold: the line still says what happened, and that a field was lost.
    return JSON.stringify({
      ...head,
      unprintableFields: error instanceof Error ? error.message : String(error),
    });
  }
}

/** Errors keep their name, message, failure type and stack; bigints become decimal strings. */
function plainValue(_key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  // isNativeError also knows an Error made in another realm (a workflow's sandbox), where instanceof fails.
  if (types.isNativeError(value) || value instanceof Error) {
    const type = (value as { type?: unknown }).type;
    return {
      name: value.name,
      message: value.message,
      ...(typeof type === 'string' ? { type } : {}),
      ...(value.cause === undefined ? {} : { cause: value.cause }),
      stack: value.stack,
    };
  }
  return value;
}

/** A line made within a span carries its trace_id and span_id, so the log leads to the trace. */
export function jsonLogger(
  write: (line: string) => void = (line) => process.stdout.write(line + '\n'),
  level: LogLevel = 'INFO',
) {
  const threshold = LOG_LEVELS.indexOf(level);
  return new DefaultLogger('TRACE', (entry) => {
    const shown = demoted(entry);
    if (LOG_LEVELS.indexOf(shown.level) >= threshold) write(jsonLogLine(withSpanIds(shown)));
  });
}

export const LOG_LEVELS = ['TRACE', 'DEBUG', 'INFO', 'WARN', 'ERROR'] as const;
export type LogLevel = (typeof LOG_LEVELS)[number];

/**
 * Lines that are no news to an operator, at DEBUG: start-up details, and each look of a run waiting for its
 * order (the workflow's own INFO line says it waits, its end says if the order never came).
 */
function demoted(entry: LogEntry): LogEntry {
  const noNews =
    (entry.level === 'INFO' && /^asset workflow-bundle-/.test(entry.message)) ||
    (entry.level === 'WARN' && entry.message.startsWith('No workflows registered')) ||
    (entry.level === 'INFO' && entry.message.startsWith('No Nexus services registered')) ||
    (entry.level === 'WARN' && entry.message === 'Activity failed' && isOrderNotYetVisible(entry.meta));
  return noNews ? { ...entry, level: 'DEBUG' } : entry;
}

function isOrderNotYetVisible(meta: LogEntry['meta']): boolean {
  const error = meta?.error as { type?: unknown } | undefined;
  return meta?.activityType === 'claimOrderMail' && error?.type === 'OrderNotFound';
}

function withSpanIds(entry: LogEntry): LogEntry {
  const span = trace.getActiveSpan()?.spanContext();
  if (span === undefined || !isSpanContextValid(span)) return entry;
  return { ...entry, meta: { ...entry.meta, trace_id: span.traceId, span_id: span.spanId } };
}

export function workerLogLine(
  level: 'info' | 'error',
  message: string,
  fields: Record<string, unknown>,
): string {
  return jsonLogLine({
    level: level === 'info' ? 'INFO' : 'ERROR',
    message,
    timestampNanos: BigInt(Date.now()) * 1_000_000n,
    meta: { component: 'worker', ...fields },
  });
}

export function logWorker(
  level: 'info' | 'error',
  message: string,
  fields: Record<string, unknown> = {},
): void {
  console.log(workerLogLine(level, message, fields));
}

/** An error line: the message and what failed. */
export function logWorkerError(message: string, error: unknown): void {
  logWorker('error', message, { error: error instanceof Error ? error.message : String(error) });
}
