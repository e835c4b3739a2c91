// The runtime's logger (installed in this process as the worker installs it: test/support/testRuntime.ts)
// takes every SDK entry into a 100 ms ordering buffer before our logger applies LOG_LEVEL. With the cut,
// entries under LOG_LEVEL never reach the buffer, and every other entry still does, in order.
import { DefaultLogger, Runtime, type LogEntry, type LogLevel } from '@temporalio/worker';
import { afterEach, describe, expect, it } from 'vitest';
import { dropBelowLevelBeforeBuffer } from '../../src/workerRuntime';

/** The runtime logger's own fields, as the cut and this test reach them. */
type Fields = { level: LogLevel; severity: number; logFunction: (entry: LogEntry) => void };
const logger = Runtime.instance().logger;
const before = { ...(logger as unknown as Fields) };

afterEach(() => {
  Object.assign(logger, before);
});

/** What reaches the runtime's buffer, for one entry at every level. */
function reachingTheBuffer(level: LogLevel): string[] {
  const reached: string[] = [];
  Object.assign(logger, before, {
    logFunction: (entry: LogEntry) => reached.push(`${entry.level} ${entry.message}`),
  });
  dropBelowLevelBeforeBuffer(logger, level);
  logger.trace('Got workflow activation');
  logger.debug('Activity started');
  logger.info('Order mail claimed');
  logger.warn('Attempt already dispatched; no second request made');
  logger.error('Order mail outcome recorded late');
  return reached;
}

describe("the runtime's logger and LOG_LEVEL", () => {
  it('the SDK buffers at TRACE whatever logger it is given (what the cut is for)', () => {
    expect(logger).toBeInstanceOf(DefaultLogger);
    expect(before.level).toBe('TRACE');
  });

  it('at INFO, TRACE and DEBUG entries never reach the buffer; INFO and above all do, in order', () => {
    expect(reachingTheBuffer('INFO')).toEqual([
      'INFO Order mail claimed',
      'WARN Attempt already dispatched; no second request made',
      'ERROR Order mail outcome recorded late',
    ]);
  });

  it('at DEBUG and WARN, the threshold moves with it', () => {
    expect(reachingTheBuffer('DEBUG')).toEqual([
      'DEBUG Activity started',
      'INFO Order mail claimed',
      'WARN Attempt already dispatched; no second request made',
      'ERROR Order mail outcome recorded late',
    ]);
    expect(reachingTheBuffer('WARN')).toEqual([
      'WARN Attempt already dispatched; no second request made',
      'ERROR Order mail outcome recorded late',
    ]);
  });
});
