import { describe, expect, it } from 'vitest';
import type { PhaseResult } from '../../dev/bench/phases';
import { headlineRatios } from '../../dev/bench/report/headlines';
import { benchPhase } from '../support/benchPhase';

/** A closed-loop phase with one worker; only what the CPU ratios read is filled in. */
function closedPhase(
  variant: string,
  server: 'dev' | 'stack',
  round: number,
  cpu: { workers: number; temporalServer: number; postgres: number; sandbox: number },
): PhaseResult {
  return benchPhase({
    variant,
    server,
    mode: 'closed',
    round,
    concurrency: 50,
    cpuSecondsPer1000: { ...cpu, temporalStore: null, harness: 0 },
  });
}

const cpu = (workers: number) => ({ workers, temporalServer: 30, postgres: 4, sandbox: 1 });

describe('product / release-2.0: main against 2.0.0, paired per round', () => {
  it('holds the CPU per order of all processes to ≤ 1.00 on each server, from the median of the rounds', () => {
    const phases = [
      closedPhase('product', 'dev', 1, cpu(25)),
      closedPhase('release-2.0', 'dev', 1, cpu(30)),
      closedPhase('release-2.0', 'dev', 2, cpu(30)),
      closedPhase('product', 'dev', 2, cpu(27)),
      closedPhase('product', 'stack', 1, cpu(40)),
      closedPhase('release-2.0', 'stack', 1, cpu(30)),
    ];
    const ratios = headlineRatios(phases, {});
    const all = (server: string) =>
      ratios.find((ratio) => ratio.name === `${server}: product / release-2.0 CPU per order, all processes`);
    expect(all('dev')).toMatchObject({ perRound: [60 / 65, 62 / 65], target: '≤ 1.00 (no worse than 2.0)' });
    expect(all('dev')?.met).toBe(true);
    expect(all('stack')).toMatchObject({ perRound: [75 / 65], met: false });
    expect(
      ratios.find((ratio) => ratio.name === 'dev: product / release-2.0 worker CPU per order'),
    ).toMatchObject({ perRound: [25 / 30, 27 / 30] });
  });

  it('gives no release ratio in a run without the variant', () => {
    const phases = [closedPhase('product', 'dev', 1, cpu(25)), closedPhase('card', 'dev', 1, cpu(20))];
    expect(headlineRatios(phases, {}).filter((ratio) => ratio.name.includes('release-2.0'))).toEqual([]);
  });
});
