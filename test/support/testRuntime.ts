// Each test file's process installs the Temporal runtime the way the worker does (src/worker.ts): the SDK's
// and the core's entries as one JSON line each. Left to the SDK's default, every in-process worker printed
// its state changes at INFO, each over half a dozen lines, and CI's output was mostly that. Warnings and
// errors still show, one line each, so a failing test's output says what the SDK saw.
import { DefaultLogger, Runtime } from '@temporalio/worker';
import { jsonLogLine } from '../../src/workerLog';

try {
  Runtime.install({
    logger: new DefaultLogger('WARN', (entry) => process.stderr.write(jsonLogLine(entry) + '\n')),
    telemetryOptions: { logging: { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } },
  });
} catch (error) {
  // A process that runs a second file under the same runtime keeps the first install (it is a singleton).
  if (!(error instanceof Error && error.name === 'IllegalStateError')) throw error;
}
