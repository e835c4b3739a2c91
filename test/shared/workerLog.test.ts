// The worker's log lines (src/workerLog.ts): pure formatting, so plain unit tests. That the worker process
// really prints them so is asserted on its output in test/secrets/canary.test.ts.
import { runInNewContext } from 'node:vm';
import { context, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { ApplicationFailure } from '@temporalio/common';
import { describe, expect, it } from 'vitest';
import { jsonLogger, jsonLogLine, workerLogLine } from '../../src/workerLog';

/** A parsed line; the fields asserted on are read through it. */
type Line = Record<string, unknown> & { error?: Record<string, unknown> };
const parse = (line: string): Line => JSON.parse(line) as Line;

const AT = BigInt(Date.UTC(2026, 11, 1, 3, 0, 0, 123)) * 1_000_000n + 456_789n;

describe('jsonLogLine', () => {
  it('one line of JSON: time to the millisecond, the level in lower case, the message, then the fields', () => {
    const line = jsonLogLine({
      level: 'INFO',
      message: 'Order mail send finished',
      timestampNanos: AT,
      meta: { orderId: '42', attempt: 1, outcome: 'accepted', sdkComponent: 'activity' },
    });
    expect(line).not.toContain('\n');
    expect(parse(line)).toEqual({
      time: '2026-12-01T03:00:00.123Z',
      level: 'info',
      message: 'Order mail send finished',
      orderId: '42',
      attempt: 1,
      outcome: 'accepted',
      sdkComponent: 'activity',
    });
  });

  it('an error keeps its name, message, failure type and stack; a bigint becomes a string', () => {
    const failure = ApplicationFailure.create({ type: 'MailRefused', message: 'refused with 422' });
    const parsed = parse(
      jsonLogLine({ level: 'WARN', message: 'x', timestampNanos: AT, meta: { error: failure, eventId: 7n } }),
    );
    expect(parsed.error).toMatchObject({
      name: 'ApplicationFailure',
      message: 'refused with 422',
      type: 'MailRefused',
    });
    expect(parsed.error?.stack).toContain('refused with 422');
    expect(parsed.eventId).toBe('7');
  });

  it('a field JSON cannot hold still leaves a line with the message', () => {
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    const parsed = parse(
      jsonLogLine({ level: 'ERROR', message: 'kept', timestampNanos: AT, meta: { cycle } }),
    );
    expect(parsed).toMatchObject({ level: 'error', message: 'kept' });
    expect(parsed.unprintableFields).toMatch(/circular/i);
  });

  it("an entry's fields cannot replace its time, level or message", () => {
    const parsed = parse(
      jsonLogLine({
        level: 'INFO',
        message: 'real',
        timestampNanos: AT,
        meta: { message: 'fake', level: 'debug' },
      }),
    );
    expect(parsed).toMatchObject({ level: 'info', message: 'real', time: '2026-12-01T03:00:00.123Z' });
  });

  it('a field whose getter throws, and an error from another realm (a workflow sandbox), still give one line', () => {
    const meta = {
      get broken(): string {
        throw new Error('getter failed');
      },
    };
    expect(parse(jsonLogLine({ level: 'INFO', message: 'kept', timestampNanos: AT, meta }))).toMatchObject({
      message: 'kept',
      unprintableFields: 'getter failed',
    });
    const foreign = runInNewContext('new TypeError("from the sandbox")') as unknown;
    expect(foreign instanceof Error).toBe(false);
    const parsed = parse(
      jsonLogLine({ level: 'ERROR', message: 'x', timestampNanos: AT, meta: { error: foreign } }),
    );
    expect(parsed.error).toMatchObject({ name: 'TypeError', message: 'from the sandbox' });
  });

  it('the installed logger writes INFO and above, one line each', () => {
    const lines: string[] = [];
    const logger = jsonLogger((line) => lines.push(line));
    logger.debug('not shown', { orderId: '1' });
    logger.info('Order mail claimed', { orderId: '1' });
    logger.error('Order mail outcome recorded late', { orderId: '2' });
    expect(lines.map(parse)).toMatchObject([
      { level: 'info', message: 'Order mail claimed', orderId: '1' },
      { level: 'error', message: 'Order mail outcome recorded late', orderId: '2' },
    ]);
  });

  it("LOG_LEVEL's threshold holds, and the SDK's start-up noise is DEBUG, not INFO or WARN", () => {
    const lines: string[] = [];
    const logger = jsonLogger((line) => lines.push(line));
    logger.info('asset workflow-bundle-791e29c12775185c95c1.js 1.82 MiB [emitted] [immutable] (name: main)');
    logger.warn('No workflows registered, not polling for workflow tasks', { taskQueue: 'q' });
    logger.info('No Nexus services registered, not polling for Nexus tasks');
    logger.warn('Workflow task failed', { orderId: '3' });
    // A run waiting for its order: each look's failed claim is no news; any other failure stays a warning.
    const notYet = Object.assign(new Error('Order 4 does not exist; no mail was sent.'), {
      type: 'OrderNotFound',
    });
    logger.warn('Activity failed', { activityType: 'claimOrderMail', workflowId: '4', error: notYet });
    const refused = Object.assign(new Error('connection refused'), { type: 'DependencyUnavailable' });
    logger.warn('Activity failed', { activityType: 'claimOrderMail', workflowId: '5', error: refused });
    logger.warn('Activity failed', { activityType: 'sendOrderMail', workflowId: '6', error: notYet });
    expect(lines.map(parse)).toEqual([
      expect.objectContaining({ level: 'warn', message: 'Workflow task failed' }),
      expect.objectContaining({ level: 'warn', message: 'Activity failed', workflowId: '5' }),
      expect.objectContaining({ level: 'warn', message: 'Activity failed', workflowId: '6' }),
    ]);

    const debugLines: string[] = [];
    const debug = jsonLogger((line) => debugLines.push(line), 'DEBUG');
    debug.info('asset workflow-bundle-1.js 1.82 MiB');
    debug.warn('No workflows registered, not polling for workflow tasks');
    expect(debugLines.map(parse).map((line) => line.level)).toEqual(['debug', 'debug']);

    const quiet: string[] = [];
    const warnOnly = jsonLogger((line) => quiet.push(line), 'WARN');
    warnOnly.info('Order mail claimed', { orderId: '1' });
    warnOnly.error('Order mail outcome recorded late', { orderId: '2' });
    expect(quiet.map(parse)).toMatchObject([{ level: 'error', orderId: '2' }]);
  });

  it("the worker's own lines have the same shape, with component worker", () => {
    expect(parse(workerLogLine('info', 'Worker started', { taskQueue: 'q' }))).toMatchObject({
      level: 'info',
      message: 'Worker started',
      component: 'worker',
      taskQueue: 'q',
    });
  });

  it('a line made within a span carries its trace and span ids (tracing on); one outside carries none', async () => {
    // What src/tracing/tracing.ts registers when tracing is on: a context manager and a real provider.
    const contextManager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(contextManager);
    const tracer = new BasicTracerProvider().getTracer('test');
    const lines: string[] = [];
    const logger = jsonLogger((line) => lines.push(line));
    try {
      const ids = await tracer.startActiveSpan('activity', async (span) => {
        await Promise.resolve(); // across an await, as in an activity
        logger.info('Order mail claimed', { orderId: '1' });
        span.end();
        return span.spanContext();
      });
      logger.info('Worker stopping');
      const [inSpan, outside] = lines.map(parse);
      expect(inSpan).toMatchObject({
        message: 'Order mail claimed',
        trace_id: ids.traceId,
        span_id: ids.spanId,
      });
      expect(outside).toMatchObject({ message: 'Worker stopping' });
      expect(outside).not.toHaveProperty('trace_id');
      expect(outside).not.toHaveProperty('span_id');
    } finally {
      contextManager.disable();
      context.disable();
      trace.disable();
    }
  });
});
