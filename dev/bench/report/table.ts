// The stdout report: machine, closed-loop table, open-loop table with knees, headline ratios.
import os from 'node:os';
import type { BenchEnvironmentFacts, BenchReport } from './benchReport';
import type { PhaseResult } from '../phases';
import {
  ACCEPTED_ACTIONS_STRETCH_TARGET,
  ACCEPTED_ACTIONS_TARGET,
  usdPerMillionOrders,
} from '../cost/pricing';
import type { CostRow } from '../cost/costRows';
import { SEGMENTS } from '../latencySegments';
import { notSustained, totalCpuPer1000, type Knee, type Ratio } from './headlines';

/**
 * How a phase's variant is named in tables and charts: with its server when the run used more than one
 * (`product@stack`), else as before (`product`).
 */
export function labelerFor(phases: PhaseResult[]): (phase: PhaseResult) => string {
  const servers = new Set(phases.flatMap((phase) => (phase.server === null ? [] : [phase.server])));
  const many = servers.size > 1 || (servers.size === 1 && !servers.has('dev'));
  return (phase) => (many && phase.server !== null ? `${phase.variant}@${phase.server}` : phase.variant);
}

/** A knee named as its phases are (labelerFor). */
export function labelKnee(report: BenchReport, knee: Knee): string {
  const phase = report.phases.find(
    (candidate) => candidate.variant === knee.variant && candidate.server === knee.server,
  );
  return phase === undefined ? knee.variant : labelerFor(report.phases)(phase);
}

/** One line per server and path: events and Actions of the product beside the floor's, and the price. */
export function costLines(report: BenchReport): string[] {
  const { costs } = report;
  if (costs.length === 0) return [];
  const lines = [
    `What one order costs (one recorded run per path; Temporal Cloud Actions by docs.temporal.io/cloud/actions; ` +
      `price at $${report.actionPrice.usdPerMillionActions} per million Actions, ${report.actionPrice.source}, read ${report.actionPrice.readOn})`,
    table(
      [
        'server',
        'workflow',
        'path',
        'events',
        'Actions',
        'USD per 1M orders',
        'Actions by rule',
        'not billed',
      ],
      costs.map((row) => [
        row.server,
        row.variant,
        row.path,
        String(row.events),
        String(row.actions),
        usdPerMillionOrders(row.actions).toFixed(0),
        describeRules(row.actionsByRule),
        describeRules(row.notBilled),
      ]),
    ),
  ];
  for (const verdict of actionTargets(costs)) lines.push(verdict);
  return lines;
}

/** The accepted path's Actions held against the issue's targets, per server. */
export function actionTargets(costs: CostRow[]): string[] {
  return costs
    .filter((row) => row.variant === 'product' && row.path === 'accepted')
    .map((row) => {
      const met = row.actions <= ACCEPTED_ACTIONS_TARGET;
      const stretch = row.actions <= ACCEPTED_ACTIONS_STRETCH_TARGET;
      return (
        `  Actions per accepted order (${row.server}): ${row.actions}; target ≤ ${ACCEPTED_ACTIONS_TARGET} ` +
        `${met ? 'met' : 'MISSED'}, ≤ ${ACCEPTED_ACTIONS_STRETCH_TARGET} keeping the Web UI filters ${stretch ? 'met' : 'missed'}`
      );
    });
}

function describeRules(rules: Partial<Record<string, number>>): string {
  const entries = Object.entries(rules);
  return entries.length === 0 ? '-' : entries.map(([rule, count]) => `${rule} ${count}`).join(', ');
}

export function renderTables(report: BenchReport): string {
  const lines: string[] = [];
  const { machine } = report;
  lines.push(
    `Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.nodeVersion}, ${machine.platform}`,
    `Load average at start ${machine.loadAverageAtStart.join(' / ')}, at end ${machine.loadAverageAtEnd?.join(' / ') ?? '?'} (1/5/15 min)`,
    `Date: ${machine.date}   Profile: ${report.options.profile}   Command: ${report.command}`,
    ...describeEnvironment(report.environment),
    '',
  );
  const label = labelerFor(report.phases);
  const costs = costLines(report);
  if (costs.length > 0) lines.push(...costs, '');
  const closed = report.phases.filter((phase) => phase.mode === 'closed');
  if (closed.length > 0) {
    lines.push(`Closed loop, ${closed[0]!.concurrency} concurrent starters (latency: start → recorded row)`);
    lines.push(
      table(
        [
          'variant',
          'workers',
          'round',
          'orders',
          'per s',
          'p50 ms',
          'p99 ms',
          'max ms',
          'wkr CPU s/1k',
          'srv CPU s/1k',
          'srv pg CPU s/1k',
          'pg CPU s/1k',
          'all CPU s/1k',
          'wkr RSS MiB',
          'pg tx/order',
          'srv pg tx/order',
          'cores wkr/srv/srvpg/pg/sbx/all',
        ],
        closed.map((phase) => [
          label(phase),
          String(phase.workers),
          String(phase.round),
          String(phase.orders),
          fixed(phase.throughputPerSecond, 1),
          fixed(phase.latency.p50Ms, 0),
          fixed(phase.latency.p99Ms, 0),
          fixed(phase.latency.maxMs, 0),
          fixed(phase.cpuSecondsPer1000.workers, 1),
          fixed(phase.cpuSecondsPer1000.temporalServer, 1),
          fixed(phase.cpuSecondsPer1000.temporalStore, 1),
          fixed(phase.cpuSecondsPer1000.postgres, 1),
          fixed(totalCpuPer1000(phase), 1),
          fixed(phase.workerPeakRssMiB, 0),
          fixed(phase.commitsPerOrder.postgres, 1),
          fixed(phase.commitsPerOrder.temporalStore, 1),
          coresOf(phase),
        ]),
      ),
      '',
    );
  }
  const scale = scaleSummary(closed, label);
  if (scale.length > 0) lines.push('Scale (closed loop, median over rounds): who uses the CPU', ...scale, '');
  const open = report.phases.filter((phase) => phase.mode === 'open');
  if (open.length > 0) {
    lines.push(
      'Open loop, 1 worker (latency from the SCHEDULED start → recorded row; starts: due → accepted by the server)',
    );
    lines.push(
      table(
        [
          'variant',
          'offered/s',
          'achieved/s',
          'p50 ms',
          'p99 ms',
          'max ms',
          'kept up',
          'starts p99 ms',
          'wkr CPU s/1k',
          'srv CPU s/1k',
          'srv pg CPU s/1k',
          'cores wkr/srv/srvpg/pg/sbx/all',
        ],
        open.map((phase) => [
          label(phase),
          fixed(phase.offeredPerSecond, 1),
          fixed(phase.throughputPerSecond, 1),
          fixed(phase.latency.p50Ms, 0),
          fixed(phase.latency.p99Ms, 0),
          fixed(phase.latency.maxMs, 0),
          notSustained(phase) === null ? 'yes' : 'NO',
          fixed(phase.startLag?.p99Ms, 0),
          fixed(phase.cpuSecondsPer1000.workers, 1),
          fixed(phase.cpuSecondsPer1000.temporalServer, 1),
          fixed(phase.cpuSecondsPer1000.temporalStore, 1),
          coresOf(phase),
        ]),
      ),
    );
    for (const knee of report.knees) {
      lines.push(
        `Knee ${labelKnee(report, knee)}: sustained up to ${fixed(knee.sustainedPerSecond, 1)}/s` +
          (knee.firstUnsustainedPerSecond === null
            ? ' (never saturated in this sweep)'
            : `, not at ${fixed(knee.firstUnsustainedPerSecond, 1)}/s`),
      );
    }
    lines.push('');
  }
  const segmented = report.phases.filter((phase) => phase.segments !== undefined);
  if (segmented.length > 0) {
    lines.push(
      'Where the latency went (latency phases; p50 ms of each segment, server timestamps of up to 100 runs each)',
      table(
        ['variant', 'round', 'runs', ...SEGMENTS],
        segmented.map((phase) => [
          label(phase),
          String(phase.round),
          String(phase.segments!.runs),
          ...SEGMENTS.map((segment) => fixed(phase.segments!.p50Ms[segment], 1)),
        ]),
      ),
      '',
    );
  }
  lines.push('Headline ratios (same run, same servers)');
  for (const ratio of report.ratios) lines.push(`  ${ratioLine(ratio)}`);
  if (report.problems.length > 0) {
    lines.push('', 'PROBLEMS:', ...report.problems.map((problem) => `  ${problem}`));
  }
  return lines.join('\n');
}

function describeEnvironment(environment: BenchEnvironmentFacts): string[] {
  return [
    `Temporal: ${environment.temporal}`,
    `Postgres: ${environment.postgres}`,
    `Mail API: ${environment.mailApi}`,
    `Product worker: ${environment.productWorker}`,
  ];
}

function coresOf(phase: PhaseResult): string {
  return [
    phase.cores.workers,
    phase.cores.temporalServer,
    phase.cores.temporalStore,
    phase.cores.postgres,
    phase.cores.sandbox,
    phase.cores.machine,
  ]
    .map((value) => fixed(value, 2))
    .join('/');
}

/** A figure with `digits` decimals; '-' for none. */
export function fixed(value: number | null | undefined, digits: number): string {
  return value === null || value === undefined || !Number.isFinite(value) ? '-' : value.toFixed(digits);
}

function table(header: string[], rows: string[][]): string {
  const widths = header.map((title, column) =>
    Math.max(title.length, ...rows.map((row) => row[column]!.length)),
  );
  const format = (row: string[]): string =>
    row
      .map((cell, column) => (column === 0 ? cell.padEnd(widths[column]!) : cell.padStart(widths[column]!)))
      .join('  ');
  return [format(header), widths.map((width) => '-'.repeat(width)).join('  '), ...rows.map(format)].join(
    '\n',
  );
}

/**
 * Per variant and worker count: throughput and the cores each part kept busy, and the biggest consumer. On a
 * machine whose cores are all busy, that consumer is the bottleneck for this variant.
 */
export function scaleSummary(
  closed: PhaseResult[],
  label: (phase: PhaseResult) => string = (phase) => phase.variant,
): string[] {
  const lines: string[] = [];
  const variants = [...new Set(closed.map(label))];
  for (const variant of variants) {
    const counts = [
      ...new Set(closed.filter((phase) => label(phase) === variant).map((phase) => phase.workers)),
    ];
    for (const workers of counts) {
      const runs = closed.filter((phase) => label(phase) === variant && phase.workers === workers);
      const middle = [...runs].sort((a, b) => a.throughputPerSecond - b.throughputPerSecond)[
        Math.floor(runs.length / 2)
      ]!;
      const parts: [string, number][] = [
        ['workers', middle.cores.workers],
        ['Temporal server', middle.cores.temporalServer ?? 0],
        ["Temporal's Postgres", middle.cores.temporalStore ?? 0],
        ['Postgres', middle.cores.postgres ?? 0],
        ['sandbox', middle.cores.sandbox ?? 0],
        ['harness (client)', middle.resources.harnessCpuSeconds / middle.resources.wallSeconds],
      ];
      const [biggest, biggestCores] = parts.reduce((a, b) => (b[1] > a[1] ? b : a));
      lines.push(
        `  ${variant.padEnd(17)} x${workers}: ${middle.throughputPerSecond.toFixed(1).padStart(7)}/s; cores ` +
          parts.map(([name, cores]) => `${name} ${cores.toFixed(2)}`).join(', ') +
          `; machine ${fixed(middle.cores.machine, 2)} of ${os.cpus().length}; biggest: ${biggest} (${biggestCores.toFixed(2)})`,
      );
    }
  }
  return lines;
}

/** One headline ratio as the report prints it; a ratio its phases could not give says why, never "met". */
export function ratioLine(ratio: Ratio): string {
  const context = `(${ratio.of}${ratio.target ? `; target ${ratio.target}` : ''})`;
  if (ratio.notMeasured !== undefined) {
    return `${ratio.name}: not measured: ${ratio.notMeasured}   ${context}${ratio.target ? '  target not measured' : ''}`;
  }
  const verdict = ratio.met === null ? '' : ratio.met ? '  target met' : '  TARGET MISSED';
  const rounds =
    ratio.perRound.length > 1
      ? ` [per round: ${ratio.perRound.map((value) => value.toFixed(2)).join(', ')}]`
      : '';
  return `${ratio.name}: ${fixed(ratio.value, 2)}${rounds}   ${context}${verdict}`;
}
