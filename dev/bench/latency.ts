// Latency summaries from an HDR histogram (microsecond resolution, three significant digits), so p99 and the
// maximum come from every sample rather than from an average of averages.
import * as hdr from 'hdr-histogram-js';

export interface LatencySummary {
  count: number;
  p50Ms: number;
  p90Ms: number;
  /** Absent in reports written before 2026-12-06. */
  p95Ms?: number;
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

export function summarizeLatencies(latenciesMs: number[]): LatencySummary {
  const histogram = hdr.build({
    lowestDiscernibleValue: 1,
    // One hour in microseconds: far above anything a phase can produce, so nothing is clipped.
    highestTrackableValue: 3_600_000_000,
    numberOfSignificantValueDigits: 3,
  });
  try {
    for (const latency of latenciesMs) histogram.recordValue(Math.max(1, Math.round(latency * 1000)));
    const ms = (microseconds: number): number => Math.round(microseconds / 10) / 100;
    return {
      count: latenciesMs.length,
      p50Ms: ms(histogram.getValueAtPercentile(50)),
      p90Ms: ms(histogram.getValueAtPercentile(90)),
      p95Ms: ms(histogram.getValueAtPercentile(95)),
      p99Ms: ms(histogram.getValueAtPercentile(99)),
      maxMs: ms(histogram.maxValue),
      meanMs: ms(histogram.mean),
    };
  } finally {
    histogram.destroy();
  }
}
