// Everything one run measured, as written by --json.
import type { MachineFacts } from '../machine';
import type { BenchOptions } from '../options';
import type { PhaseResult } from '../phases';
import type { Knee, Ratio } from './headlines';

export interface BenchEnvironmentFacts {
  temporal: string;
  postgres: string;
  mailApi: string;
  productWorker: string;
}

export interface BenchReport {
  command: string;
  machine: MachineFacts;
  environment: BenchEnvironmentFacts;
  options: BenchOptions;
  /** The floor's closed-loop throughput with one worker: open-loop rates are fractions of it. */
  floorSaturationPerSecond: number | null;
  phases: PhaseResult[];
  knees: Knee[];
  ratios: Ratio[];
  problems: string[];
}
