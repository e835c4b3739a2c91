// The Temporal runtime of a worker process: its logger and its Prometheus exporter.
import { DefaultLogger, Runtime, type Logger } from '@temporalio/worker';
import type { WorkerConfig } from './config/loadConfig';
import { ORDER_MAIL_METRICS, SEND_DURATION_BUCKETS } from './metrics/orderMailMetrics';
import { getFreePort } from './shared/freePort';
import { jsonLogger, LOG_LEVELS, type LogLevel } from './workerLog';

// The Temporal core's own warnings and errors (a failed poll, a lost connection) go through the same JSON
// logger: left to the core, they would be plain text on stderr, between the JSON lines.
export const CORE_LOGS = { forward: {}, filter: { core: 'WARN', other: 'ERROR' } } as const;

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
    dropBelowLevelBeforeBuffer(Runtime.instance().logger, config.worker.logLevel);
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
  dropBelowLevelBeforeBuffer(Runtime.instance().logger, config.worker.logLevel);
  const separator = bindAddress.lastIndexOf(':');
  const host = bindAddress.slice(0, separator);
  // A wildcard bind is reached over loopback; any other address as it is.
  const reachableHost = host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host;
  return `http://${reachableHost}:${bindAddress.slice(separator + 1)}/metrics`;
}

/**
 * The runtime's logger takes every SDK entry, TRACE included, into a buffer that orders entries for 100 ms
 * before our logger drops those under LOG_LEVEL; it now drops them first. The same lines are written.
 */
export function dropBelowLevelBeforeBuffer(logger: Logger, level: LogLevel): void {
  if (!(logger instanceof DefaultLogger)) return;
  // DefaultLogger.log compares with `severity`: its level's place in the same five levels as ours.
  Object.assign(logger, { level, severity: LOG_LEVELS.indexOf(level) });
}
