// The figures the issue asks for, each a ratio of two things measured in the same run, and the targets they
// are held against. Nothing here fails the run: targets are reported, met or missed, with the numbers.
import { CLOCK_STEP_LIMIT_MS } from '../clock';
import type { ServerName } from '../options';
import type { PhaseResult } from '../phases';

export interface Ratio {
  name: string;
  /** Median over rounds of the per-round ratio. */
  value: number | null;
  perRound: number[];
  /** What it is a ratio of, in words. */
  of: string;
  target: string | null;
  met: boolean | null;
  /**
   * Why there is no value: a phase it would be taken from did not sustain its offered rate (absent in
   * reports written before 2026-12-06 20:00, which printed a ratio anyway).
   */
  notMeasured?: string;
}

export interface Knee {
  variant: string;
  server: ServerName | null;
  /** Highest offered rate that was sustained, below the first that was not; null if none was. */
  sustainedPerSecond: number | null;
  firstUnsustainedPerSecond: number | null;
}

/**
 * Why an open-loop phase's latency cannot be compared: it did not sustain its offered rate (a backlog, so
 * its latency is the queue's), or the wall clock stepped during it. Null: it can be.
 */
export function notSustained(phase: PhaseResult): string | null {
  const name = `${phase.variant}${phase.server === null ? '' : `@${phase.server}`}`;
  if (phase.clockStepMs !== undefined && Math.abs(phase.clockStepMs) > CLOCK_STEP_LIMIT_MS) {
    return `${name}: the wall clock stepped ${(phase.clockStepMs / 1000).toFixed(1)} s against the monotonic clock during the phase`;
  }
  if (phase.keptUp === true) return null;
  return `${name} achieved ${phase.throughputPerSecond.toFixed(1)}/s of ${phase.offeredPerSecond?.toFixed(1) ?? '?'}/s offered`;
}

/** The plain loop has no server: it pairs with the phases of any server. */
function onServer(phase: PhaseResult, server: ServerName | null | undefined): boolean {
  return server === undefined || phase.server === null || phase.server === server;
}

export function closedPhases(
  phases: PhaseResult[],
  variant: string,
  workers = 1,
  server?: ServerName | null,
): PhaseResult[] {
  return phases.filter(
    (phase) =>
      phase.mode === 'closed' &&
      phase.variant === variant &&
      phase.workers === workers &&
      onServer(phase, server),
  );
}

export function medianThroughput(
  phases: PhaseResult[],
  variant: string,
  workers = 1,
  server?: ServerName,
): number | null {
  return median(closedPhases(phases, variant, workers, server).map((phase) => phase.throughputPerSecond));
}

/** CPU seconds per 1,000 orders of everything the order needed: workers, Temporal (and its store), Postgres, sandbox. */
export function totalCpuPer1000(phase: PhaseResult): number {
  const cpu = phase.cpuSecondsPer1000;
  return (
    cpu.workers +
    (cpu.temporalServer ?? 0) +
    (cpu.temporalStore ?? 0) +
    (cpu.postgres ?? 0) +
    (cpu.sandbox ?? 0)
  );
}

/** The Temporal server's CPU per 1,000 orders, with its own Postgres where it has one (the stack). */
export function serverCpuPer1000(phase: PhaseResult): number | null {
  const { temporalServer, temporalStore } = phase.cpuSecondsPer1000;
  return temporalServer === null ? null : temporalServer + (temporalStore ?? 0);
}

/**
 * a/b per round (the two phases ran back to back, on the same server), then the median over rounds: robust
 * against a neighbour's load that comes and goes between rounds.
 */
function pairedRatio(
  phases: PhaseResult[],
  a: { variant: string; server: ServerName | null },
  b: { variant: string; server: ServerName | null },
  metric: (phase: PhaseResult) => number | null,
): { value: number | null; perRound: number[] } {
  const perRound: number[] = [];
  for (const phaseA of closedPhases(phases, a.variant, 1, a.server)) {
    const phaseB = closedPhases(phases, b.variant, 1, b.server).find(
      (candidate) => candidate.round === phaseA.round,
    );
    const valueA = metric(phaseA);
    const valueB = phaseB === undefined ? null : metric(phaseB);
    if (valueA !== null && valueB !== null && valueB > 0) perRound.push(valueA / valueB);
  }
  return { value: median(perRound), perRound };
}

function median(values: number[]): number | null {
  if (values.length === 0) return null;
  const sorted = [...values].sort((x, y) => x - y);
  const middle = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? sorted[middle]! : (sorted[middle - 1]! + sorted[middle]!) / 2;
}

export function kneesOf(phases: PhaseResult[]): Knee[] {
  const open = phases.filter((phase) => phase.mode === 'open' && phase.latencyPhase !== true);
  const keys = [...new Set(open.map((phase) => `${phase.server ?? ''}|${phase.variant}`))];
  return keys.map((key) => {
    const [serverText, variant] = key.split('|') as [string, string];
    const server = serverText === '' ? null : (serverText as ServerName);
    const sweep = open
      .filter((phase) => phase.variant === variant && phase.server === server)
      .sort((a, b) => a.offeredPerSecond! - b.offeredPerSecond!);
    const firstMiss = sweep.findIndex((phase) => notSustained(phase) !== null);
    const sustained = firstMiss === -1 ? sweep : sweep.slice(0, firstMiss);
    return {
      variant,
      server,
      sustainedPerSecond: sustained.at(-1)?.offeredPerSecond ?? null,
      firstUnsustainedPerSecond: firstMiss === -1 ? null : sweep[firstMiss]!.offeredPerSecond,
    };
  });
}

export function headlineRatios(
  phases: PhaseResult[],
  floorSaturation: Partial<Record<ServerName, number | null>>,
): Ratio[] {
  const throughput = (phase: PhaseResult): number => phase.throughputPerSecond;
  const ratios: Ratio[] = [];
  const add = (
    name: string,
    paired: { value: number | null; perRound: number[] },
    of: string,
    target: string | null,
    meets: ((value: number) => boolean) | null,
  ): void => {
    if (paired.perRound.length === 0) return;
    ratios.push({
      name,
      value: paired.value,
      perRound: paired.perRound,
      of,
      target,
      met: paired.value === null || meets === null ? null : meets(paired.value),
    });
  };
  const servers = [...new Set(phases.flatMap((phase) => (phase.server === null ? [] : [phase.server])))];
  for (const server of servers) {
    const on = (variant: string) => ({ variant, server });
    const plain = { variant: 'plain', server: null };
    const label = (name: string): string =>
      servers.length > 1 || server !== 'dev' ? `${server}: ${name}` : name;
    add(
      label('product / floor throughput'),
      pairedRatio(phases, on('product'), on('floor'), throughput),
      'closed loop, 1 worker: the product vs three regular no-op activities',
      '≥ 0.9; above 1.0 if local activities pay',
      (value) => value >= 0.9,
    );
    add(
      label('product / floor-local throughput'),
      pairedRatio(phases, on('product'), on('floor-local'), throughput),
      'closed loop, 1 worker: the product vs the same shape (local claim and record) with no-op activities',
      '≥ 0.9',
      (value) => value >= 0.9,
    );
    add(
      label('floor-local / floor throughput'),
      pairedRatio(phases, on('floor-local'), on('floor'), throughput),
      "what local claim and record change on Temporal's side alone",
      null,
      null,
    );
    add(
      label('plain / product throughput'),
      pairedRatio(phases, plain, on('product'), throughput),
      'closed loop, 1 process each: the non-durable loop vs the product',
      null,
      null,
    );
    add(
      label('product / floor-local CPU per order'),
      pairedRatio(phases, on('product'), on('floor-local'), totalCpuPer1000),
      'worker + Temporal server (+ its Postgres) + our Postgres + sandbox CPU seconds per order; insensitive to how busy the machine is',
      null,
      null,
    );
    add(
      label('product / floor-local server CPU per order'),
      pairedRatio(phases, on('product'), on('floor-local'), serverCpuPer1000),
      'Temporal server CPU per order (with its own Postgres on the stack): what the product asks of the server beyond the bare shape',
      '≤ 1.15',
      (value) => value <= 1.15,
    );
    add(
      label('floor-local / floor server CPU per order'),
      pairedRatio(phases, on('floor-local'), on('floor'), serverCpuPer1000),
      'Temporal server CPU per order: local claim and record vs regular',
      null,
      null,
    );
    add(
      label('plain / product CPU per order'),
      pairedRatio(phases, plain, on('product'), totalCpuPer1000),
      'all CPU per order: the non-durable loop vs the product',
      null,
      null,
    );
    add(
      label('product / floor-local worker peak RSS'),
      pairedRatio(phases, on('product'), on('floor-local'), (phase) => phase.workerPeakRssMiB),
      'closed loop, 1 worker, peak RSS during the measured window',
      '≤ 1.2',
      (value) => value <= 1.2,
    );
    const saturation = floorSaturation[server] ?? null;
    if (saturation !== null) {
      const halfRate = saturation * 0.5;
      const near = (variant: string): PhaseResult | undefined =>
        phases
          .filter((phase) => phase.mode === 'open' && phase.variant === variant && phase.server === server)
          .find((phase) => Math.abs(phase.offeredPerSecond! - halfRate) < 0.01 * halfRate + 0.01);
      for (const floor of ['floor', 'floor-local']) {
        const pair = [near('product'), near(floor)];
        const unsustained = pair.flatMap((phase) => (phase === undefined ? [] : [notSustained(phase)]));
        if (pair.every((phase) => phase !== undefined) && unsustained.some((why) => why !== null)) {
          ratios.push({
            name: label(`product / ${floor} p99 at 50% of floor saturation`),
            value: null,
            perRound: [],
            of: `open loop at ${halfRate.toFixed(1)}/s`,
            target: '≤ 1.5',
            met: null,
            notMeasured: unsustained.filter((why) => why !== null).join('; '),
          });
          continue;
        }
        const product = pair[0]?.latency.p99Ms;
        const reference = pair[1]?.latency.p99Ms;
        const value =
          product === undefined || reference === undefined || reference === 0 ? null : product / reference;
        if (value === null) continue;
        ratios.push({
          name: label(`product / ${floor} p99 at 50% of floor saturation`),
          value,
          perRound: [value],
          of: `open loop at ${halfRate.toFixed(1)}/s`,
          target: '≤ 1.5',
          met: value <= 1.5,
        });
      }
    }
  }
  ratios.push(...cardRatios(phases, servers));
  // The production server against the dev server: what durable persistence costs the same workload.
  if (servers.includes('dev') && servers.includes('stack')) {
    for (const variant of ['product', 'floor-local']) {
      add(
        `${variant} throughput, stack / dev`,
        pairedRatio(phases, { variant, server: 'stack' }, { variant, server: 'dev' }, throughput),
        'closed loop, 1 worker: the Temporal server on Postgres (fsync on) vs the in-memory dev server',
        null,
        null,
      );
      add(
        `${variant} server CPU per order, stack / dev`,
        pairedRatio(phases, { variant, server: 'stack' }, { variant, server: 'dev' }, serverCpuPer1000),
        'Temporal server CPU per order, its Postgres included on the stack',
        null,
        null,
      );
    }
  }
  return ratios;
}

/** The rate of the paired latency phases on `server`: half the card's knee, else half its closed-loop rate. */
export function halfCardKnee(phases: PhaseResult[], server: ServerName): number | null {
  const knee = kneesOf(phases).find((entry) => entry.variant === 'card' && entry.server === server);
  const rate = knee?.sustainedPerSecond ?? medianThroughput(phases, 'card', 1, server);
  return rate === null || rate === undefined ? null : rate / 2;
}

/**
 * product / card (and each switch variant against both), paired per round, on each server; and product /
 * release-2.0, main against 2.0.0's own worker, whose CPU per order main must not exceed.
 */
function cardRatios(phases: PhaseResult[], servers: ServerName[]): Ratio[] {
  const ratios: Ratio[] = [];
  const cpu = (part: keyof PhaseResult['cpuSecondsPer1000']) => (phase: PhaseResult) =>
    phase.cpuSecondsPer1000[part];
  const metrics: [string, (phase: PhaseResult) => number | null][] = [
    ['CPU per order, all processes', totalCpuPer1000],
    [
      'CPU per order, all but the sandbox',
      (phase) => totalCpuPer1000(phase) - (phase.cpuSecondsPer1000.sandbox ?? 0),
    ],
    ['worker CPU per order', cpu('workers')],
    ['Temporal server CPU per order (+ its Postgres)', serverCpuPer1000],
    ['our Postgres CPU per order', cpu('postgres')],
    ['sandbox CPU per order', cpu('sandbox')],
    ['throughput', (phase) => phase.throughputPerSecond],
  ];
  const variants = [...new Set(phases.map((phase) => phase.variant))];
  const switches = variants.filter((variant) => variant.startsWith('product-'));
  for (const server of servers) {
    const pairs: [string, string][] = [
      ['product', 'card'],
      ...(variants.includes('release-2.0') ? [['product', 'release-2.0'] as [string, string]] : []),
      ...switches.flatMap((variant): [string, string][] => [
        [variant, 'card'],
        ['product', variant],
      ]),
    ];
    for (const [a, b] of pairs) {
      for (const [what, metric] of metrics) {
        const allMetrics = b === 'card' || b === 'release-2.0';
        if (!allMetrics && what !== 'CPU per order, all processes' && what !== 'worker CPU per order')
          continue;
        const paired = pairedRatio(phases, { variant: a, server }, { variant: b, server }, metric);
        if (paired.perRound.length === 0) continue;
        const headline = a === 'product' && what === 'CPU per order, all processes';
        const cardTarget = headline && b === 'card';
        const releaseTarget = headline && b === 'release-2.0';
        ratios.push({
          name: `${server}: ${a} / ${b} ${what}`,
          value: paired.value,
          perRound: paired.perRound,
          of: 'closed loop, 1 worker, paired per round',
          target: cardTarget ? '≤ 1.10 on the stack' : releaseTarget ? '≤ 1.00 (no worse than 2.0)' : null,
          met:
            cardTarget && server === 'stack'
              ? paired.value !== null && paired.value <= 1.1
              : releaseTarget
                ? paired.value !== null && paired.value <= 1
                : null,
        });
      }
      // Latency from start to the recorded row, in the open-loop phases at half the card's knee.
      ratios.push(...latencyRatios(phases, server, a, b));
    }
  }
  return ratios;
}

/**
 * a / b latency (p50, p95), paired per round, from the latency phases at half the card's knee. A phase of
 * either variant that did not sustain its rate gives no ratio at all: its latency would be the backlog's.
 */
export function latencyRatios(phases: PhaseResult[], server: ServerName, a: string, b: string): Ratio[] {
  const latencyOf = (variant: string) =>
    phases.filter(
      (phase) => phase.latencyPhase === true && phase.variant === variant && phase.server === server,
    );
  const phasesA = latencyOf(a);
  const phasesB = latencyOf(b);
  if (phasesA.length === 0 || phasesB.length === 0) return [];
  // Per variant, the first phase that was not sustained and in how many rounds.
  const unsustained = [phasesA, phasesB].flatMap((list) => {
    const reasons = list.flatMap((phase) => {
      const why = notSustained(phase);
      return why === null ? [] : [why];
    });
    return reasons.length === 0 ? [] : [`${reasons[0]!} (${reasons.length} of ${list.length} rounds)`];
  });
  const offered = phasesA[0]?.offeredPerSecond?.toFixed(1) ?? '?';
  const ratios: Ratio[] = [];
  for (const percentile of ['p50Ms', 'p95Ms'] as const) {
    const isTarget = a === 'product' && b === 'card' && percentile === 'p95Ms';
    const common = {
      name: `${server}: ${a} / ${b} latency ${percentile.slice(0, 3)} at half the card's knee`,
      of: `open loop at ${offered}/s, start → recorded row`,
      target: isTarget ? '≤ 1.10 on the stack' : null,
    };
    if (unsustained.length > 0) {
      ratios.push({ ...common, value: null, perRound: [], met: null, notMeasured: unsustained.join('; ') });
      continue;
    }
    const perRound: number[] = [];
    for (const phaseA of phasesA) {
      const phaseB = phasesB.find((candidate) => candidate.round === phaseA.round);
      const valueA = phaseA.latency[percentile];
      const valueB = phaseB?.latency[percentile];
      if (valueA !== undefined && valueB !== undefined && valueB > 0) perRound.push(valueA / valueB);
    }
    if (perRound.length === 0) continue;
    const value = median(perRound);
    ratios.push({
      ...common,
      value,
      perRound,
      met: isTarget && server === 'stack' ? value !== null && value <= 1.1 : null,
    });
  }
  return ratios;
}
