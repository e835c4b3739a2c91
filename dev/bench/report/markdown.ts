// The same report as Markdown tables (--markdown PATH), for docs/benchmarks.md: figures are pasted
// from a run, never typed by hand.
import type { PhaseResult } from '../phases';
import type { BenchReport } from './benchReport';
import { usdPerMillionOrders } from '../cost/pricing';
import { serverCpuPer1000, totalCpuPer1000 } from './headlines';
import { actionTargets, fixed, labelerFor, labelKnee, scaleSummary } from './table';

export function renderMarkdown(report: BenchReport): string {
  const { machine } = report;
  const out: string[] = [];
  out.push(
    `- Date: ${machine.date}; command: \`${report.command}\``,
    `- Machine: ${machine.cpuModel}, ${machine.cores} cores, ${machine.memoryGiB} GiB, Node ${machine.nodeVersion}, ${machine.platform}`,
    `- Load average (1/5/15 min): ${machine.loadAverageAtStart.join(' / ')} at the start, ${machine.loadAverageAtEnd?.join(' / ') ?? '?'} at the end`,
    `- Temporal: ${report.environment.temporal}; Postgres: ${report.environment.postgres}`,
    `- Mail API: ${report.environment.mailApi}; product worker: ${report.environment.productWorker}`,
    '',
  );
  const label = labelerFor(report.phases);
  if (report.costs.length > 0) {
    out.push(
      `**What one order costs**: one recorded run per path; history events and Temporal Cloud Actions counted by ` +
        `the rules of docs.temporal.io/cloud/actions; USD at the list rate of $${report.actionPrice.usdPerMillionActions} ` +
        `per million Actions (${report.actionPrice.source}, read ${report.actionPrice.readOn}).`,
      '',
      row(['server', 'workflow', 'path', 'events', 'Actions', 'USD per 1M orders', 'Actions by rule']),
      row(['---', '---', '---', '---:', '---:', '---:', '---']),
      ...report.costs.map((cost) =>
        row([
          cost.server,
          cost.variant,
          cost.path,
          String(cost.events),
          String(cost.actions),
          usdPerMillionOrders(cost.actions).toFixed(0),
          Object.entries(cost.actionsByRule)
            .map(([rule, count]) => `${rule} ${count}`)
            .join(', '),
        ]),
      ),
      '',
      ...actionTargets(report.costs).map((line) => `- ${line.trim()}`),
      '',
    );
  }
  const closed = report.phases.filter((phase) => phase.mode === 'closed');
  if (closed.length > 0) {
    out.push(
      `**Closed loop**, ${closed[0]!.concurrency} concurrent starters; latency from the start request to the recorded row.`,
      '',
      row([
        'variant',
        'workers',
        'round',
        'orders/s',
        'p50 ms',
        'p99 ms',
        'max ms',
        'worker CPU s/1k',
        'server CPU s/1k',
        "server's Postgres CPU s/1k",
        'Postgres CPU s/1k',
        'all CPU s/1k',
        'worker peak RSS MiB',
        'Postgres transactions per order',
        "server's Postgres transactions per order",
        "cores worker / server / server's Postgres / Postgres / machine",
      ]),
      row(Array.from({ length: 16 }, (_, index) => (index === 0 ? '---' : '---:'))),
      ...closed.map((phase) =>
        row([
          label(phase),
          String(phase.workers),
          String(phase.round),
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
          [
            phase.cores.workers,
            phase.cores.temporalServer,
            phase.cores.temporalStore,
            phase.cores.postgres,
            phase.cores.machine,
          ]
            .map((value) => fixed(value, 2))
            .join(' / '),
        ]),
      ),
      '',
    );
  }
  const scale = scaleSummary(closed, label);
  if (scale.length > 0) {
    out.push(
      '**Scale**: cores each part kept busy (median round), and the biggest consumer:',
      '',
      ...scale.map((line) => `- ${line.trim()}`),
      '',
    );
  }
  const open = report.phases.filter((phase) => phase.mode === 'open');
  if (open.length > 0) {
    out.push(
      '**Open loop**, 1 worker; latency from the scheduled start to the recorded row.',
      '',
      row([
        'variant',
        'offered/s',
        'achieved/s',
        'p50 ms',
        'p99 ms',
        'max ms',
        'sustained',
        'worker CPU s/1k',
        'server CPU s/1k (with its Postgres)',
      ]),
      row(['---', '---:', '---:', '---:', '---:', '---:', '---', '---:', '---:']),
      ...[...open]
        .sort((a, b) => label(a).localeCompare(label(b)) || a.offeredPerSecond! - b.offeredPerSecond!)
        .map((phase: PhaseResult) =>
          row([
            label(phase),
            fixed(phase.offeredPerSecond, 1),
            fixed(phase.throughputPerSecond, 1),
            fixed(phase.latency.p50Ms, 0),
            fixed(phase.latency.p99Ms, 0),
            fixed(phase.latency.maxMs, 0),
            phase.keptUp ? 'yes' : '**no**',
            fixed(phase.cpuSecondsPer1000.workers, 1),
            fixed(serverCpuPer1000(phase), 1),
          ]),
        ),
      '',
      ...report.knees.map(
        (knee) =>
          `- Knee, ${labelKnee(report, knee)}: sustained up to ${fixed(knee.sustainedPerSecond, 1)}/s` +
          (knee.firstUnsustainedPerSecond === null
            ? ' (not saturated in this sweep)'
            : `, not at ${fixed(knee.firstUnsustainedPerSecond, 1)}/s`),
      ),
      '',
    );
  }
  out.push(
    '**Headline ratios** (median over rounds of per-round ratios):',
    '',
    row(['ratio', 'value', 'per round', 'target', 'met']),
    row(['---', '---:', '---', '---', '---']),
    ...report.ratios.map((ratio) =>
      row([
        `${ratio.name} (${ratio.of})`,
        ratio.notMeasured === undefined ? fixed(ratio.value, 2) : `not measured: ${ratio.notMeasured}`,
        ratio.perRound.map((value) => value.toFixed(2)).join(', '),
        ratio.target ?? '',
        ratio.notMeasured !== undefined && ratio.target !== null
          ? 'not measured'
          : ratio.met === null
            ? ''
            : ratio.met
              ? 'yes'
              : '**no**',
      ]),
    ),
    '',
  );
  return out.join('\n');
}

function row(cells: string[]): string {
  return `| ${cells.join(' | ')} |`;
}
