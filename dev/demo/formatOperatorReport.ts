// The operator section of the report as a person reads it (`npm run chaos -- --operators`).
import type { OperatorSection } from './operatorReport';

export function formatOperatorSection(section: OperatorSection): string[] {
  const lines = ['', `Operator acts: ${section.acts} made, ${section.done} done`];
  for (const [act, counts] of Object.entries(section.perAct)) {
    const refused = Object.entries(counts.refused)
      .sort(([a], [b]) => a.localeCompare(b))
      .map(([code, times]) => `${code} ${times}`)
      .join(', ');
    const made = counts.done + counts.failed + Object.values(counts.refused).reduce((sum, n) => sum + n, 0);
    lines.push(
      `  ${act.padEnd(26)}${String(counts.done).padStart(4)} done` +
        (refused === '' ? '' : `; refused: ${refused}`) +
        (counts.failed > 0 ? `; failed ${counts.failed}` : '') +
        (counts.noTarget > 0 ? `; no target ${counts.noTarget}` : '') +
        (made === 0 && counts.noTarget === 0 ? ' (never drawn)' : ''),
    );
  }
  lines.push(
    `  re-sends asked for        ${section.resendsAsked.resends} (on ${section.resendsAsked.orders} orders): ` +
      'resolve --as failed, then retry; each allows one more message',
  );
  if (section.stoppedBeforeClaim > 0) {
    lines.push(
      `  stopped before any claim  ${section.stoppedBeforeClaim} orders (cancelled or terminated; no row, no mail)`,
    );
  }
  if (section.resolvedSentWithoutMessage > 0) {
    lines.push(`  resolved as sent, no mail ${section.resolvedSentWithoutMessage} (the operator's word)`);
  }
  const { sweeps } = section;
  lines.push(
    `  reconciliation sweeps     ${sweeps.scheduledRuns} by its Schedule` +
      (sweeps.scheduleEveryMs > 0 ? ` (every ${sweeps.scheduleEveryMs / 1000} s)` : ' (none)') +
      `, ${sweeps.finalRuns} at the end; attempts they settled ${sweeps.settledBySweep}; ` +
      `'sending' rows left ${sweeps.sendingRowsLeft}` +
      (sweeps.lastReport === null
        ? ''
        : `; the last found ${sweeps.lastReport.stuck} stuck under a closed run`),
  );
  for (const failure of section.failures) lines.push(`  failed: ${failure}`);
  return lines;
}
