// The report as a person reads it at the end of `npm run demo` / `npm run chaos`.
import { formatFailoverSection } from './failoverReport';
import { formatOperatorSection } from './formatOperatorReport';
import { formatCustomerOutcomes } from './customerOutcomes';
import type { RunReport } from './report';

export function formatReport(report: RunReport): string {
  const lines: string[] = [];
  const row = (label: string, value: string): void => {
    lines.push(`  ${label.padEnd(22)}${value}`);
  };
  const counts = (record: Record<string, number>, order?: (a: string, b: string) => number): string => {
    const entries = Object.entries(record).sort(([a], [b]) => (order ? order(a, b) : a.localeCompare(b)));
    return entries.length === 0 ? 'none' : entries.map(([key, value]) => `${key} ${value}`).join(' · ');
  };

  const provider = report.verification.provider;
  lines.push(
    '',
    `Report: profile ${report.profile}, transport ${report.transport}` +
      (provider === null
        ? ''
        : ` (${provider}, ${report.verification.verifies ? 'verifying' : 'not verifying'})`) +
      `, policy ${report.policy}`,
  );
  // What the customers got leads: the provider's side, whatever the rows say (dev/demo/customerOutcomes.ts).
  formatCustomerOutcomes(report.customers, row);
  row(
    'Orders',
    `${report.orders}, sent by ${report.workers} worker processes; ${report.starts.clientProcesses} client ` +
      `processes started each order ${report.starts.clientProcesses}× (${report.starts.startCalls} start calls: ` +
      `${report.starts.started} started, ${report.starts.alreadyStarted} already started, ` +
      `${report.starts.retriedCalls} retried)`,
  );
  const against = report.rowsAgainstFacts.acceptedWithoutMessage + report.rowsAgainstFacts.noTerminalRow;
  row(
    'Rows against facts',
    `${against} (sent/accepted without its message: ${report.rowsAgainstFacts.acceptedWithoutMessage}; ` +
      `no terminal row: ${report.rowsAgainstFacts.noTerminalRow})` +
      (against > 0 ? `, e.g. ${report.rowsAgainstFacts.examples.join(', ')}` : ''),
  );
  if (report.inbox !== null) {
    row(
      'Inbox',
      `${report.inbox.messages} mails at ${report.inbox.url}; mails per order ` +
        counts(report.inbox.messagesPerOrder, (a, b) => Number(a) - Number(b)),
    );
  }
  row('Rows (state/outcome)', counts(report.rows));
  if (report.verification.verifies) {
    const { lookups, lookupFaults, webhookPosts, webhookDuplicates } = report.verification;
    row(
      'Verification',
      `${lookups} lookups (${lookupFaults} failed on purpose)` +
        (webhookPosts > 0 ? `; ${webhookPosts} webhook posts (${webhookDuplicates} duplicates)` : ''),
    );
  }
  if (report.lies !== null) {
    row('Lies told (lookups)', String(report.lies.told));
    for (const [kind, lie] of Object.entries(report.lies.byKind)) {
      row(`  ${kind}`, `${lie.told} lookups about ${lie.orders} orders; settled: ${counts(lie.settled)}`);
    }
  }
  if (report.webhookLies !== null) {
    const { told, byKind, rows } = report.webhookLies;
    row('Lies told (webhooks)', String(told));
    for (const [kind, lie] of Object.entries(byKind)) {
      row(
        `  ${kind}`,
        `${lie.told} postings about ${lie.orders} orders: ${counts(lie.receiver)}; ` +
          `their orders settled: ${counts(lie.settled)}`,
      );
    }
    row(
      'Webhook rows',
      `${rows.eventRows} events stored for ${rows.acceptedEvents} taken; ` +
        `${rows.deliveryRows} replay tokens for ${rows.acceptedPostings} postings taken`,
    );
  }
  row('Workflows', counts(report.workflows));
  row(
    'Faults injected',
    `${counts(report.faults.injected)} (of ${report.faults.requests} requests); ` +
      `refused-connection windows ${report.faults.refusedWindows}`,
  );
  row(
    'Kills and restarts',
    `workers killed ${report.faults.workerKills}, restarted ${report.faults.workerRestarts}` +
      (report.faults.workerExits > 0
        ? ` (and ${report.faults.workerExits} exited on their own while a server was down, restarted)`
        : '') +
      '; ' +
      `Postgres restarted ${report.faults.postgresRestarts}; Temporal restarted ${report.faults.temporalRestarts}`,
  );
  if (report.cluster !== null) {
    const { acts, redeliveries, shardsAtEnd, historyShards } = report.cluster;
    row(
      'Cluster acts',
      `${acts.serviceKillsOrRestarts} service kills or restarts: history hosts killed ${acts.historyKills}, ` +
        `matching hosts killed ${acts.matchingKills}, frontends restarted ${acts.frontendRestarts}, ` +
        `rolling restarts ${acts.rollingRestarts} (${acts.rolledHosts} hosts)` +
        (acts.failedActs > 0 ? `; ${acts.failedActs} acts FAILED` : ''),
    );
    row('Shards at the end', `${counts(shardsAtEnd)} (of ${historyShards})`);
    const { workflowTasks, activityTasks } = redeliveries;
    row(
      'Workflow tasks',
      `${workflowTasks.scheduled} scheduled; timed out ${workflowTasks.timedOutStartToClose} start-to-close, ` +
        `${workflowTasks.timedOutScheduleToStart} schedule-to-start; failed ${counts(workflowTasks.failed)}`,
    );
    row(
      'Activity tasks',
      `${activityTasks.scheduled} started; ${activityTasks.retries} retries (${counts(activityTasks.retriesByType)}), ` +
        `${activityTasks.retriedAfterTimeout.startToClose} after a start-to-close timeout, ` +
        `${activityTasks.retriedAfterTimeout.scheduleToStart} schedule-to-start, ` +
        `${activityTasks.retriedAfterTimeout.heartbeat} heartbeat; timed out for good ${activityTasks.timedOut}` +
        ` (${redeliveries.workflowsRead} histories read` +
        (redeliveries.unreadable > 0 ? `, ${redeliveries.unreadable} unreadable` : '') +
        ')',
    );
  }
  row('Elapsed', `${report.elapsedSeconds} s (${report.ordersPerSecond} orders/s)`);
  if (report.operators !== null) lines.push(...formatOperatorSection(report.operators));
  if (report.failover != null) lines.push(formatFailoverSection(report.failover));

  lines.push('', 'Invariants');
  for (const invariant of report.invariants) {
    const mark = invariant.holds ? 'ok  ' : 'FAIL';
    const detail = invariant.holds
      ? ''
      : ` — ${invariant.violationCount} orders, e.g. ${invariant.violations.join(', ')}`;
    lines.push(`  ${mark} ${invariant.name}: ${invariant.description}${detail}`);
    if (invariant.actsBehind !== undefined) {
      const acts = Object.entries(invariant.actsBehind)
        .sort(([, a], [, b]) => b - a)
        .map(([act, orders]) => `${act} ${orders}`)
        .join(', ');
      lines.push(`         operator acts done on those orders (orders per act): ${acts}`);
    }
  }
  const passed = report.invariants.filter((invariant) => invariant.holds).length;
  lines.push('', report.ok ? 'All invariants hold.' : 'INVARIANTS FAILED.');
  // Alone on its line, in the form CI logs are read for.
  lines.push(`Invariants: ${passed} passed, ${report.invariants.length - passed} failed`);
  return lines.join('\n');
}
