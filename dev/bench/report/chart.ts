// Latency against offered load, one line per variant (p99 solid, p50 dashed), rendered to SVG on the
// server with vega-lite (spec) and vega (renderer), so no browser is needed.
import type { PhaseResult } from '../phases';
import { labelerFor } from './table';

export async function renderLatencyChart(phases: PhaseResult[], title: string): Promise<string> {
  const label = labelerFor(phases);
  const values = phases
    .filter((phase) => phase.mode === 'open' && phase.latency.count > 0)
    .flatMap((phase) => [
      {
        variant: label(phase),
        offered: phase.offeredPerSecond,
        percentile: 'p99',
        latencyMs: Math.max(1, phase.latency.p99Ms),
      },
      {
        variant: label(phase),
        offered: phase.offeredPerSecond,
        percentile: 'p50',
        latencyMs: Math.max(1, phase.latency.p50Ms),
      },
    ]);
  // vega and vega-lite are ES modules only; this project is CommonJS, so they are loaded with import().
  const vegaLite = await import('vega-lite');
  const vega = await import('vega');
  const spec = vegaLite.compile({
    $schema: 'https://vega.github.io/schema/vega-lite/v6.json',
    title: {
      text: 'Latency (scheduled start → recorded row) vs offered load; solid p99, dashed p50',
      subtitle: title,
    },
    width: 640,
    height: 360,
    background: 'white',
    data: { values },
    mark: { type: 'line', point: true },
    encoding: {
      x: { field: 'offered', type: 'quantitative', title: 'offered load (orders/s)' },
      y: {
        field: 'latencyMs',
        type: 'quantitative',
        title: 'latency (ms, log scale)',
        scale: { type: 'log' },
      },
      color: { field: 'variant', type: 'nominal', title: 'variant' },
      strokeDash: {
        field: 'percentile',
        type: 'nominal',
        title: 'percentile',
        sort: ['p99', 'p50'],
      },
    },
  }).spec;
  const view = new vega.View(vega.parse(spec), { renderer: 'none' });
  try {
    return await view.toSVG();
  } finally {
    view.finalize();
  }
}
