// Each test file's process installs the Temporal runtime the way the worker does (src/worker.ts): the SDK's
// and the core's entries as one JSON line each. Left to the SDK's default, every in-process worker printed
// its state changes at INFO, each over half a dozen lines, and CI's output was mostly that. Warnings and
// errors still show, one line each, so a failing test's output says what the SDK saw.
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { afterEach } from 'vitest';
import { jsonLogLine } from '../../src/workerLog';
import { installRowWriteCapture, takeRefused } from './rowWrites';

try {
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => process.stderr.write(jsonLogLine(entry) + '\n')),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } },
  });
} catch (error) {
  // A process that runs a second file under the same runtime keeps the first install (it is a singleton).
  if (!(error instanceof Error && error.name === 'IllegalStateError')) throw error;
}

// Every statement writing the mail row is captured at the pool; one from the product that does not come from
// src/mailRow/statements.ts is refused where it runs and fails the test it ran in (test/support/rowWrites.ts).
installRowWriteCapture();
afterEach(() => {
  const refused = takeRefused();
  if (refused.length > 0) {
    throw new Error(
      `${refused.length} statement(s) wrote the mail row outside src/mailRow/statements.ts: ${refused
        .map((write) => write.refused)
        .join('; ')}`,
    );
  }
});
