// The Temporal runtime of a worker process: its logger and its Prometheus exporter.
import { Runtime } from '@temporalio/worker';
import type { WorkerConfig } from './config/loadConfig';
import { ORDER_MAIL_METRICS, SEND_DURATION_BUCKETS } from './metrics/orderMailMetrics';
import { getFreePort } from './shared/freePort';
import { jsonLogger } from './workerLog';

// The Temporal core's own warnings and errors (a failed poll, a lost connection) go through the same JSON
// logger: left to the core, they would be plain text on stderr, between the JSON lines.
const CORE_LOGS = { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } as const;

/**
 * Before any connection (a process-wide singleton). Its signal handling is off: it would stop both workers
 * at once, and they stop in order.
 */
export async function installRuntime(config: WorkerConfig): Promise<string | null> {
  const { metricsBindAddress, httpBindAddress } = config.worker;
  if (metricsBindAddress === null && httpBindAddress === null) {
    Runtime.install({
      shutdownSignals: [],
      logger: jsonLogger(undefined, config.worker.logLevel),
      telemetryOptions: { logging: CORE_LOGS },
    });
    return null;
  }
  const bindAddress = metricsBindAddress ?? `127.0.0.1:${await getFreePort('127.0.0.1')}`;
  Runtime.install({
    shutdownSignals: [],
    logger: jsonLogger(undefined, config.worker.logLevel),
    telemetryOptions: {
      logging: CORE_LOGS,
      metrics: {
        prometheus: {
          bindAddress,
          histogramBucketOverrides: { [ORDER_MAIL_METRICS.sendDuration]: SEND_DURATION_BUCKETS },
        },
      },
    },
  });
  const separator = bindAddress.lastIndexOf(':');
  const host = bindAddress.slice(0, separator);
  // A wildcard bind is reached over loopback; any other address as it is.
  const reachableHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
  return `http://${reachableHost}:${bindAddress.slice(separator + 1)}/metrics`;
}
