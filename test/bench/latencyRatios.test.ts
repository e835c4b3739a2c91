import { describe, expect, it } from 'vitest';
import { clockStepMs } from '../../dev/bench/clock';
import type { PhaseResult } from '../../dev/bench/phases';
import { headlineRatios, kneesOf, type Ratio } from '../../dev/bench/report/headlines';
import { ratioLine } from '../../dev/bench/report/table';
import { benchPhase } from '../support/benchPhase';

const latency = (p50Ms: number, p95Ms: number) => ({
  count: 2000,
  p50Ms,
  p90Ms: p95Ms,
  p95Ms,
  p99Ms: p95Ms,
  maxMs: p95Ms,
  meanMs: p50Ms,
});

/** An open-loop phase at `offered`/s on the stack; only what the headlines read is filled in. */
function openPhase(
  variant: string,
  round: number,
  figures: { achieved: number; keptUp: boolean; p50Ms: number; p95Ms: number; clockStepMs?: number },
  offered = 14.3,
  latencyPhase = true,
): PhaseResult {
  return benchPhase({
    variant,
    server: 'stack',
    mode: 'open',
    round,
    offeredPerSecond: offered,
    orders: 2000,
    throughputPerSecond: figures.achieved,
    latency: latency(figures.p50Ms, figures.p95Ms),
    keptUp: figures.keptUp,
    ...(figures.clockStepMs === undefined ? {} : { clockStepMs: figures.clockStepMs }),
    ...(latencyPhase ? { latencyPhase: true } : {}),
  });
}

const sustained = (p50Ms: number, p95Ms: number) => ({ achieved: 14.3, keptUp: true, p50Ms, p95Ms });
// The stack's latency phases of the 2026-12-06 18:30 run: 11.0/s achieved of 14.3/s, p50 41 s for both.
const backlog = { achieved: 11.0, keptUp: false, p50Ms: 41_386, p95Ms: 41_600 };

function latencyTarget(phases: PhaseResult[]): Ratio {
  const ratio = headlineRatios(phases, {}).find(
    (candidate) => candidate.name === "stack: product / card latency p95 at half the card's knee",
  );
  expect(ratio).toBeDefined();
  return ratio!;
}

describe('the latency ratio at half the card’s knee', () => {
  it('is refused when either variant’s phase did not sustain its offered rate, and never meets the target', () => {
    const phases = [1, 2, 3].flatMap((round) => [
      openPhase('card', round, round === 2 ? backlog : sustained(100, 120)),
      openPhase('product', round, sustained(105, 125)),
    ]);
    const ratio = latencyTarget(phases);
    expect(ratio.value).toBeNull();
    expect(ratio.met).not.toBe(true);
    expect(ratio.notMeasured).toBe('card@stack achieved 11.0/s of 14.3/s offered (1 of 3 rounds)');
    const line = ratioLine(ratio);
    expect(line).toContain('not measured: card@stack achieved 11.0/s of 14.3/s offered');
    expect(line).toContain('target not measured');
    expect(line).not.toContain('target met');
  });

  it('is refused when both backed up alike, as in the 2026-12-06 18:30 run that printed 1.00 "target met"', () => {
    const phases = [1, 2, 3, 4].flatMap((round) => [
      openPhase('card', round, backlog),
      openPhase('product', round, backlog),
    ]);
    const ratio = latencyTarget(phases);
    expect(ratio.value).toBeNull();
    expect(ratio.met).not.toBe(true);
    expect(ratio.notMeasured).toBe(
      'product@stack achieved 11.0/s of 14.3/s offered (4 of 4 rounds); card@stack achieved 11.0/s of 14.3/s offered (4 of 4 rounds)',
    );
  });

  it('is refused when the wall clock stepped during a phase (a paused machine), whatever the phase reported', () => {
    const phases = [1, 2, 3].flatMap((round) => [
      openPhase('card', round, sustained(100, 120)),
      openPhase('product', round, {
        ...sustained(105, 125),
        ...(round === 3 ? { clockStepMs: 35_200 } : {}),
      }),
    ]);
    const ratio = latencyTarget(phases);
    expect(ratio.value).toBeNull();
    expect(ratio.notMeasured).toBe(
      'product@stack: the wall clock stepped 35.2 s against the monotonic clock during the phase (1 of 3 rounds)',
    );
  });

  it('is the median of the per-round ratios when every phase sustained its rate', () => {
    const phases = [1, 2, 3].flatMap((round) => [
      openPhase('card', round, sustained(100, 100)),
      openPhase('product', round, sustained(100, [105, 120, 108][round - 1]!)),
    ]);
    const ratio = latencyTarget(phases);
    expect(ratio.notMeasured).toBeUndefined();
    expect(ratio.perRound.map((value) => Number(value.toFixed(2)))).toEqual([1.05, 1.2, 1.08]);
    expect(ratio.value).toBeCloseTo(1.08, 5);
    expect(ratio.met).toBe(true);
    expect(ratioLine(ratio)).toContain('target met');
  });
});

describe('the bench’s clock', () => {
  it('measures how far the wall clock stepped against the monotonic clock', () => {
    const begin = { wallMs: 1_000_000, monotonicMs: 500 };
    expect(clockStepMs(begin, { wallMs: 1_010_000, monotonicMs: 10_500 })).toBe(0);
    expect(clockStepMs(begin, { wallMs: 1_045_200, monotonicMs: 10_500 })).toBe(35_200);
  });

  it('does not count a sweep phase with a clock step as sustained for the knee', () => {
    const sweep = [
      openPhase('card', 1, sustained(90, 100), 14.3, false),
      openPhase('card', 1, { ...sustained(90, 100), achieved: 21.4, clockStepMs: 6_000 }, 21.4, false),
    ];
    expect(kneesOf(sweep)).toEqual([
      { variant: 'card', server: 'stack', sustainedPerSecond: 14.3, firstUnsustainedPerSecond: 21.4 },
    ]);
  });
});
