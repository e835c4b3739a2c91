import type { PhaseResult } from '../../dev/bench/phases';

/** A bench phase with one worker and every figure empty; a test fills in only what it reads. */
export function benchPhase(
  fields: Pick<PhaseResult, 'variant' | 'server' | 'mode' | 'round'> & Partial<PhaseResult>,
): PhaseResult {
  return {
    workers: 1,
    concurrency: null,
    offeredPerSecond: null,
    orders: 200,
    throughputPerSecond: 10,
    latency: { count: 200, p50Ms: 1, p90Ms: 1, p95Ms: 1, p99Ms: 1, maxMs: 1, meanMs: 1 },
    keptUp: null,
    resources: {} as PhaseResult['resources'],
    cpuSecondsPer1000: {
      workers: 0,
      temporalServer: null,
      temporalStore: null,
      postgres: null,
      sandbox: null,
      harness: 0,
    },
    cores: {
      workers: 0,
      temporalServer: null,
      temporalStore: null,
      postgres: null,
      sandbox: null,
      machine: null,
    },
    workerPeakRssMiB: 0,
    commitsPerOrder: { postgres: null, temporalStore: null },
    problems: [],
    ...fields,
  };
}
