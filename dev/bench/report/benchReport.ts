// Everything one run measured, as written by --json.
import type { CostRow } from '../cost/costRows';
import type { ACTION_LIST_PRICE } from '../cost/pricing';
import type { MachineFacts } from '../machine';
import type { BenchOptions, ServerName } from '../options';
import type { PhaseResult } from '../phases';
import type { Knee, Ratio } from './headlines';

export interface BenchEnvironmentFacts {
  temporal: string;
  postgres: string;
  mailApi: string;
  productWorker: string;
  /** With release-2.0: where 2.0.0's worker ran from. */
  releaseWorker?: string;
}

export interface BenchReport {
  command: string;
  machine: MachineFacts;
  environment: BenchEnvironmentFacts;
  options: BenchOptions;
  /** Per server, the floor's closed-loop throughput with one worker: open-loop rates are fractions of it. */
  floorSaturationPerSecond: Partial<Record<ServerName, number | null>>;
  /** One recorded order per path and server: history events and Temporal Cloud Actions. */
  costs: CostRow[];
  actionPrice: typeof ACTION_LIST_PRICE;
  phases: PhaseResult[];
  knees: Knee[];
  ratios: Ratio[];
  problems: string[];
}

/**
 * A report written by an earlier version of the bench, in today's shape: those ran on one server (the dev
 * server), counted no Actions, and had no store column. Nothing measured is changed.
 */
export function upgradeReport(earlier: unknown): BenchReport {
  const report = earlier as BenchReport & { floorSaturationPerSecond: unknown };
  const saturation = report.floorSaturationPerSecond;
  report.floorSaturationPerSecond =
    typeof saturation === 'number' || saturation === null ? { dev: saturation } : saturation;
  report.costs ??= [];
  report.options.servers ??= ['dev'];
  for (const phase of report.phases) {
    phase.server ??= phase.variant === 'plain' ? null : 'dev';
    phase.cpuSecondsPer1000.temporalStore ??= null;
    phase.cores.temporalStore ??= null;
    phase.commitsPerOrder ??= { postgres: null, temporalStore: null };
  }
  return report;
}
