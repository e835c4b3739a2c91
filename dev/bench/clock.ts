// The bench's clock. Latency is a start time taken here against a record time Postgres (now()) or a worker
// (Date.now()) stamps, so both sides read the same clock: the wall clock. The monotonic clock is kept beside
// it only to notice when the wall clock steps during a phase (a virtual machine paused and resumed, its clock
// then set forward), which voids that phase's latencies and rates (docs/benchmarks.md, "The bench's clock").

/**
 * The wall clock may move this far against the monotonic clock in a phase before its latencies are void: NTP
 * slews at most 0.5 ms a second (70 ms over a 140 s phase); a paused virtual machine steps by seconds.
 */
export const CLOCK_STEP_LIMIT_MS = 250;

/** Epoch milliseconds on the wall clock, as Postgres's now() and the workers' Date.now() read it. */
export function nowMs(): number {
  return Date.now();
}

export interface ClockReading {
  wallMs: number;
  monotonicMs: number;
}

export function readClock(): ClockReading {
  return { wallMs: Date.now(), monotonicMs: performance.now() };
}

/** How far the wall clock moved against the monotonic clock between two readings (0 when neither stepped). */
export function clockStepMs(begin: ClockReading, end: ClockReading): number {
  return end.wallMs - begin.wallMs - (end.monotonicMs - begin.monotonicMs);
}
