// One measured phase: a variant under closed-loop or open-loop load, with its latency histogram, throughput
// and the CPU and memory of every process involved over the measured window.
import { summarizeLatencies, type LatencySummary } from './latency';
import { summarizeSegments, type SegmentSummary } from './latencySegments';
import { insertBenchOrders } from './orders';
import type { Database } from '../../src/db/pool';
import { CLOCK_STEP_LIMIT_MS, clockStepMs, nowMs, readClock } from './clock';
import type { CommitCounter } from './commitCounter';
import { ResourceMeter, type MeteredProcesses, type PhaseResources } from './resourceMeter';
import type { ServerName } from './options';
import type { Variant } from './variants';

export interface PhaseResult {
  variant: string;
  /** The Temporal server the variant ran against; null for the plain loop (no Temporal). */
  server: ServerName | null;
  mode: 'closed' | 'open';
  workers: number;
  /** Closed loop: which interleaved round (1…); open loop: 1. */
  round: number;
  concurrency: number | null;
  offeredPerSecond: number | null;
  /** Orders whose latency is in the histogram (closed loop: started in the measured window). */
  orders: number;
  throughputPerSecond: number;
  latency: LatencySummary;
  /** Open loop: the offered rate was sustained (throughput kept up and the backlog did not grow). */
  keptUp: boolean | null;
  /**
   * How far the wall clock moved against the monotonic clock during the phase: near 0, unless the machine
   * was paused (dev/bench/clock.ts). Absent in reports written before 2026-12-06 20:00.
   */
  clockStepMs?: number;
  /** Open loop, Temporal variants: from each start's due time to the server's answer (the starter's share). */
  startLag?: LatencySummary;
  /** Latency phases, Temporal variants: where a sample of runs spent their time, from their histories. */
  segments?: SegmentSummary;
  /** An open-loop phase at half the card's knee, run once per round for the paired latency ratios. */
  latencyPhase?: boolean;
  resources: PhaseResources;
  cpuSecondsPer1000: {
    workers: number;
    temporalServer: number | null;
    /** The Temporal server's own Postgres (the stack's); null for the dev server. */
    temporalStore: number | null;
    postgres: number | null;
    sandbox: number | null;
    harness: number;
  };
  /** Average cores busy during the window. */
  cores: {
    workers: number;
    temporalServer: number | null;
    temporalStore: number | null;
    postgres: number | null;
    sandbox: number | null;
    machine: number | null;
  };
  workerPeakRssMiB: number;
  /**
   * Database transactions committed per order during the window: ours (each statement is one) and, on the
   * stack, the Temporal server's persistence (history and visibility). null where not measured.
   */
  commitsPerOrder: { postgres: number | null; temporalStore: number | null };
  problems: string[];
}

export interface PhaseContext {
  db: Database;
  /** Our Postgres and the sandbox; the Temporal server's processes come with the variant. */
  shared: Pick<MeteredProcesses, 'postgres' | 'sandbox'>;
  commits: CommitCounter;
  /** Unique ids for variants whose orders need no row in Postgres. */
  syntheticIds(count: number): string[];
  log(message: string): void;
}

// Generous guesses of the most each kind could do here; a phase that runs out of orders ends early.
const MAX_TEMPORAL_RATE = 250;
const MAX_PLAIN_RATE = 1_500;

/** Commit counters read at the start and at the end of a window. */
class CommitWindow {
  private readonly starts: Promise<(number | null)[]>;
  constructor(private readonly counters: (CommitCounter | null)[]) {
    this.starts = Promise.all(counters.map((counter) => counter?.read() ?? Promise.resolve(null)));
  }

  /** Commits per order in the window, per counter; call when the window ends. */
  async perOrder(orders: number): Promise<(number | null)[]> {
    const ends = await Promise.all(this.counters.map((counter) => counter?.read() ?? Promise.resolve(null)));
    const starts = await this.starts;
    return ends.map((end, index) => {
      const start = starts[index];
      return end === null || start === null || start === undefined || orders === 0
        ? null
        : (end - start) / orders;
    });
  }
}

function commitWindow(context: PhaseContext, variant: Variant): CommitWindow {
  return new CommitWindow([
    variant.ownDatabase?.commits ?? context.commits,
    variant.server?.storeCommits ?? null,
  ]);
}

function meterFor(context: PhaseContext, variant: Variant): ResourceMeter {
  return new ResourceMeter({
    workers: variant.workerPids(),
    ...context.shared,
    temporalServer: variant.server?.pids.temporalServer ?? null,
    temporalStore: variant.server?.pids.temporalStore ?? null,
  });
}

async function ordersFor(context: PhaseContext, variant: Variant, count: number): Promise<string[]> {
  if (!variant.needsDatabaseOrders) return context.syntheticIds(count);
  return insertBenchOrders(variant.ownDatabase?.db ?? context.db, count);
}

export async function runClosedPhase(
  context: PhaseContext,
  variant: Variant,
  workers: number,
  concurrency: number,
  warmupSeconds: number,
  durationSeconds: number,
  round = 1,
): Promise<PhaseResult> {
  const totalMs = (warmupSeconds + durationSeconds) * 1000;
  const perSecond = variant.name === 'plain' ? MAX_PLAIN_RATE * Math.min(workers, 2) : MAX_TEMPORAL_RATE;
  const orderIds = await ordersFor(
    context,
    variant,
    Math.ceil(perSecond * (warmupSeconds + durationSeconds)),
  );
  const meter = meterFor(context, variant);
  let windowStart = 0;
  let windowEnd = 0;
  let resources: PhaseResources | null = null;
  let commits: CommitWindow | null = null;
  let commitsEnd: Promise<(number | null)[]> | null = null;
  const begin = setTimeout(() => {
    windowStart = nowMs();
    meter.begin();
    commits = commitWindow(context, variant);
  }, warmupSeconds * 1000);
  const end = setTimeout(() => {
    windowEnd = nowMs();
    resources = meter.end();
    // Read now; divided by the orders recorded in the window once they are known.
    commitsEnd = commits?.perOrder(1) ?? null;
  }, totalMs);
  const clockAtStart = readClock();
  const run = await variant.closedLoop(orderIds, concurrency, totalMs);
  const clockStep = clockStepMs(clockAtStart, readClock());
  clearTimeout(begin);
  clearTimeout(end);
  if (windowStart === 0) throw new Error(`${variant.name}: ran out of orders during the warm-up`);
  if (resources === null) {
    // Ran out of orders before the time was up: the window ends when the starters stopped.
    windowEnd = run.stoppedAtMs;
    resources = meter.end();
    commitsEnd = commits === null ? null : (commits as CommitWindow).perOrder(1);
  }
  const measured = run.starts.filter(([, startedAt]) => startedAt >= windowStart && startedAt <= windowEnd);
  const latencies = measured.flatMap(([orderId, startedAt]) => {
    const recordedAt = run.recordedAtMs.get(orderId);
    return recordedAt === undefined ? [] : [recordedAt - startedAt];
  });
  const recordedInWindow = [...run.recordedAtMs.values()].filter(
    (at) => at >= windowStart && at <= windowEnd,
  ).length;
  const windowCommits = (await commitsEnd) ?? [null, null];
  const problems = await variant.verify(
    run.starts.map(([orderId]) => orderId),
    run.recordedAtMs,
  );
  return summarize({
    variant: variant.name,
    server: variant.server?.name ?? null,
    mode: 'closed',
    workers,
    round,
    concurrency,
    offeredPerSecond: null,
    ordersDone: recordedInWindow,
    throughputPerSecond: recordedInWindow / ((windowEnd - windowStart) / 1000),
    latencies,
    keptUp: null,
    clockStepMs: clockStep,
    resources,
    commits: windowCommits,
    problems: [...clockProblem(variant, clockStep), ...problems],
  });
}

export async function runOpenPhase(
  context: PhaseContext,
  variant: Variant,
  workers: number,
  ratePerSecond: number,
  seconds: number,
  latencyRound: number | null = null,
): Promise<PhaseResult> {
  const count = Math.max(2, Math.round(ratePerSecond * seconds));
  const orderIds = await ordersFor(context, variant, count);
  const meter = meterFor(context, variant);
  const t0 = nowMs() + 200;
  meter.begin();
  const commits = commitWindow(context, variant);
  const drainTimeoutMs = Math.max(120_000, seconds * 4_000);
  const clockAtStart = readClock();
  const { recordedAtMs: recordedAt, startLagsMs } = await variant.openLoop(
    orderIds,
    t0,
    ratePerSecond,
    drainTimeoutMs,
  );
  const clockStep = clockStepMs(clockAtStart, readClock());
  const resources = meter.end();
  const windowCommits = await commits.perOrder(1);
  const intervalMs = 1000 / ratePerSecond;
  const latencies = orderIds.flatMap((orderId, index) => {
    const at = recordedAt.get(orderId);
    return at === undefined ? [] : [at - (t0 + index * intervalMs)];
  });
  // Achieved rate over the whole phase, drain included: what a caller offering this rate actually got.
  const lastRecorded = Math.max(...recordedAt.values());
  const achieved = recordedAt.size / Math.max(0.001, (lastRecorded - t0) / 1000);
  // A backlog that grows shows as latency growing through the phase, whatever the averages say.
  const quarter = Math.max(1, Math.floor(latencies.length / 4));
  const early = median(latencies.slice(0, quarter));
  const late = median(latencies.slice(-quarter));
  const keptUp = recordedAt.size === count && achieved >= 0.85 * ratePerSecond && late <= 2 * early + 250;
  const problems = await variant.verify(orderIds, recordedAt);
  const phase = summarize({
    variant: variant.name,
    server: variant.server?.name ?? null,
    mode: 'open',
    workers,
    round: latencyRound ?? 1,
    concurrency: null,
    offeredPerSecond: ratePerSecond,
    ordersDone: count,
    throughputPerSecond: achieved,
    latencies,
    keptUp,
    clockStepMs: clockStep,
    resources,
    commits: windowCommits,
    problems: [...clockProblem(variant, clockStep), ...problems],
  });
  const withStarts = startLagsMs === null ? phase : { ...phase, startLag: summarizeLatencies(startLagsMs) };
  if (latencyRound === null) return withStarts;
  const segments = await sampleSegments(variant, orderIds);
  return { ...withStarts, latencyPhase: true, ...(segments === null ? {} : { segments }) };
}

function summarize(input: {
  variant: string;
  server: ServerName | null;
  mode: 'closed' | 'open';
  workers: number;
  round: number;
  concurrency: number | null;
  offeredPerSecond: number | null;
  ordersDone: number;
  throughputPerSecond: number;
  latencies: number[];
  keptUp: boolean | null;
  clockStepMs: number;
  resources: PhaseResources;
  /** Commits in the window: ours, the server's store. */
  commits: (number | null)[];
  problems: string[];
}): PhaseResult {
  const { resources } = input;
  const per1000 = (seconds: number | null): number | null =>
    seconds === null || input.ordersDone === 0 ? null : (seconds / input.ordersDone) * 1000;
  const perOrder = (count: number | null): number | null =>
    count === null || input.ordersDone === 0 ? null : count / input.ordersDone;
  const cores = (seconds: number | null): number | null =>
    seconds === null ? null : seconds / resources.wallSeconds;
  return {
    variant: input.variant,
    server: input.server,
    mode: input.mode,
    workers: input.workers,
    round: input.round,
    concurrency: input.concurrency,
    offeredPerSecond: input.offeredPerSecond,
    orders: input.latencies.length,
    throughputPerSecond: input.throughputPerSecond,
    latency: summarizeLatencies(input.latencies),
    keptUp: input.keptUp,
    clockStepMs: input.clockStepMs,
    resources,
    cpuSecondsPer1000: {
      workers: per1000(resources.workerCpuSeconds) ?? 0,
      temporalServer: per1000(resources.temporalServerCpuSeconds),
      temporalStore: per1000(resources.temporalStoreCpuSeconds),
      postgres: per1000(resources.postgresCpuSeconds),
      sandbox: per1000(resources.sandboxCpuSeconds),
      harness: per1000(resources.harnessCpuSeconds) ?? 0,
    },
    cores: {
      workers: cores(resources.workerCpuSeconds) ?? 0,
      temporalServer: cores(resources.temporalServerCpuSeconds),
      temporalStore: cores(resources.temporalStoreCpuSeconds),
      postgres: cores(resources.postgresCpuSeconds),
      sandbox: cores(resources.sandboxCpuSeconds),
      machine: resources.machineBusyCores,
    },
    workerPeakRssMiB: Math.max(0, ...resources.perWorker.map((worker) => worker.peakRssMiB)),
    commitsPerOrder: {
      postgres: perOrder(input.commits[0] ?? null),
      temporalStore: perOrder(input.commits[1] ?? null),
    },
    problems: input.problems,
  };
}

// Histories read after a latency phase, spread over it: enough for a p95 of each segment.
const SEGMENT_SAMPLE = 100;

async function sampleSegments(variant: Variant, orderIds: string[]): Promise<SegmentSummary | null> {
  const history = variant.history?.bind(variant);
  if (history === undefined) return null;
  const step = Math.max(1, Math.floor(orderIds.length / SEGMENT_SAMPLE));
  const sample = orderIds.filter((_, index) => index % step === 0).slice(0, SEGMENT_SAMPLE);
  const histories: unknown[] = [];
  for (let index = 0; index < sample.length; index += 10) {
    histories.push(
      ...(await Promise.all(sample.slice(index, index + 10).map((orderId) => history(orderId)))),
    );
  }
  return summarizeSegments(histories);
}

/** A phase during which the wall clock stepped: its latencies and rates compare two different clocks. */
function clockProblem(variant: Variant, stepMs: number): string[] {
  if (Math.abs(stepMs) <= CLOCK_STEP_LIMIT_MS) return [];
  const name = `${variant.name}${variant.server === null ? '' : `@${variant.server.name}`}`;
  return [
    `${name}: the wall clock stepped ${(stepMs / 1000).toFixed(1)} s against the monotonic clock during the phase (the machine paused?); its latencies and rates are void`,
  ];
}

function median(values: number[]): number {
  if (values.length === 0) return 0;
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
