// The report as a person reads it at the end of `npm run demo` / `npm run chaos`: every section's text, and the
// invariants with the summary line CI reads. The same report as JSON is reportFiles.ts's.
import type { Settlement, SettlementCount, CustomerOutcomes } from './customerOutcomes';
import type { FailoverSection } from './failoverReport';
import type { ProviderChangeSection } from './providerChangeReport';
import { formatSendOutageSection } from '../sendOutage';
import type { OperatorSection } from './operatorReport';
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
  // What the customers got leads: the provider's side, whatever the rows say (customerOutcomes.ts).
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
  const reorder = report.verification.reorder;
  if (reorder !== undefined) {
    row(
      'Lookup reorder',
      `faulted sends and ${Math.round(reorder.share * 100)}% of the others shown ${reorder.holdMs / 1000} s ` +
        `after they were taken (watermark ${reorder.provider === 'generic' ? reorder.watermark : 'n/a'}): ` +
        `${reorder.lookupsHiding} lookups hid one, ${reorder.lookupsOutOfOrder} showed a later send first, ` +
        `${reorder.watermarkPastHidden} watermarks past a hidden send`,
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
    const { believed, genuine } = report.webhookLies;
    row(
      'Lies believed',
      `${believed.byReceiver + believed.byAnAttempt} (stored as ours by the receiver ${believed.byReceiver}; ` +
        `from elsewhere, settling an attempt SES never took ${believed.byAnAttempt}` +
        (believed.orders.length > 0 ? `: orders ${believed.orders.slice(0, 10).join(', ')}` : '') +
        ')',
    );
    if (genuine != null) {
      row(
        'Genuine events',
        `${genuine.events}: refused ${genuine.refused}, never taken ${genuine.neverTaken}; ` +
          `${genuine.retries} retries posted, the latest taken ${Math.round(genuine.latestTakenMs / 1000)} s ` +
          'after its first posting',
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
  if (report.providerChange != null) lines.push(formatProviderChangeSection(report.providerChange));
  if (report.sendHold != null) {
    const hold = report.sendHold;
    const at = (ms: number | null) => (ms === null ? '-' : `${Math.round(ms / 100) / 10} s`);
    lines.push(
      `Hold: asked at ${at(hold.holdAskedAtMs)}, returned at ${at(hold.heldAtMs)} ` +
        `(${hold.inFlightAtHold.length} attempt(s) still in flight), resumed at ${at(hold.resumedAtMs)}; ` +
        `${hold.requestsDuringHold} send request(s) and ${hold.lookupsDuringHold} lookup(s) at the provider while ` +
        `held (and ${hold.requestsOfListedInFlight} of the attempts listed in flight); ${hold.heldOrdersAtResume} order(s) held at resume, ${hold.signalled} run(s) signalled` +
        (hold.failure === null ? '' : `; FAILED: ${hold.failure}`),
    );
  }
  if (report.sendOutage != null) lines.push(formatSendOutageSection(report.sendOutage));
  if (report.upgrade != null) {
    const upgrade = report.upgrade;
    const seconds = (ms: number) => `${Math.round(ms / 1000)} s`;
    lines.push(
      `Upgrade: runs per build ${Object.entries(upgrade.runsByBuild)
        .map(([build, runs]) => `${build} ${runs}`)
        .join(', ')}; ${upgrade.shapedLoad ? 'shaped' : 'plain'} load; workers of N / N+1 killed ` +
        `${upgrade.killsByBuild.n ?? 0} / ${upgrade.killsByBuild.n1 ?? 0}; ` +
        `unversioned runs drained ${upgrade.unversionedDrainedAtMs === null ? 'never seen' : `at ${seconds(upgrade.unversionedDrainedAtMs)}`}; ` +
        `${upgrade.movedFromUnversioned} unversioned run(s) moved to N; ` +
        `${upgrade.nondeterminismFailures.length} non-determinism failure(s), ${upgrade.crossedBuilds.length} run(s) across builds` +
        `; faults ended ${upgrade.faultsEndedAtMs === null ? 'never' : `at ${seconds(upgrade.faultsEndedAtMs)}`}` +
        (upgrade.failure === null ? '' : `; FAILED: ${upgrade.failure}`),
    );
    for (const shot of upgrade.switches) {
      const open = Object.entries(shot.openByBuild)
        .map(
          ([build, states]) =>
            `${build} ${Object.entries(states)
              .map(([state, n]) => `${n} ${state}`)
              .join('/')}`,
        )
        .join('; ');
      lines.push(
        `  ${shot.to} ${shot.kind === 'ramping' ? `ramping at ${shot.percentage}%` : 'current'} at ${seconds(shot.atMs)} (its workers started in ` +
          `${seconds(shot.polling.workersStartedInMs)}, seen polling at ${seconds(shot.polling.confirmedAtMs)}, ` +
          `the switch waited ${seconds(shot.polling.waitedMs)} for them): open runs ${open}; rows ${shot.rows.claimed} claimed, ` +
          `${shot.rows.midSend} mid-send, ${shot.rows.notSent} not sent awaiting a retry; ` +
          `${shot.from}'s open runs just before: ${shot.oldRuns.open} (${shot.oldRuns.claimed} claimed, ` +
          `${shot.oldRuns.midSend} mid-send, ${shot.oldRuns.settleDelay} in a settle delay, ` +
          `${shot.oldRuns.notSentBackoff} in a not-sent backoff, ${shot.oldRuns.other} other)`,
      );
      const back = shot.returnedTo;
      if (back != null) {
        lines.push(
          `    ${back.build}'s open runs just before (the build returned to): ${back.runs.open} ` +
            `(${back.runs.claimed} claimed, ${back.runs.midSend} mid-send, ${back.runs.settleDelay} in a settle ` +
            `delay, ${back.runs.notSentBackoff} in a not-sent backoff, ${back.runs.other} other)`,
        );
      }
    }
  }

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

/** The report's opening lines: what the customers got, then how the unknowns were settled. */
function formatCustomerOutcomes(
  outcomes: CustomerOutcomes,
  row: (label: string, value: string) => void,
): void {
  const { customers, missing, duplicated, unknowns } = outcomes;
  row(
    'Customers',
    `${outcomes.orders} orders: ${customers.one} got one mail, ${customers.twoOrMore} got two or more, ` +
      `${customers.none} got none`,
  );
  row(
    'Missing',
    missing.orders === 0
      ? '0 customers without a mail'
      : `${missing.orders} customers without a mail (their rows: ${entries(missing.byRow)}), e.g. ${missing.examples.join(', ')}`,
  );
  row(
    'Duplicates',
    duplicated.orders === 0
      ? '0 customers with a second mail'
      : `${duplicated.orders} customers with more than one mail (${duplicated.extraMails} extra), e.g. ` +
          duplicated.examples.join(', '),
  );
  if (unknowns.attempts === 0) {
    row('Unknown outcomes', 'none');
    return;
  }
  const settled = (Object.entries(unknowns.settledBy) as [Settlement, SettlementCount][])
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([settlement, count]) => {
      const judged =
        count.notJudged === count.attempts
          ? ''
          : count.wrong === 0
            ? ', all right'
            : `, ${count.wrong} wrong`;
      return `${settlement} ${count.attempts}${judged}`;
    });
  row(
    'Unknown outcomes',
    `${unknowns.attempts} sends ended without a definite answer; settled: ${settled.join(' · ')}` +
      (unknowns.wrong > 0 ? ` (${unknowns.wrong} settled against what the provider had)` : ''),
  );
}

function entries(counts: Record<string, number>): string {
  return Object.entries(counts)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([key, value]) => `${key} ${value}`)
    .join(' · ');
}

/** The operator section (`npm run chaos -- --operators`): each act done, refused or failed, and the sweeps. */
function formatOperatorSection(section: OperatorSection): string[] {
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

/** The --provider-change section: the steps and when, the customers without a mail, the ops listing. */
function formatProviderChangeSection(section: ProviderChangeSection): string {
  const at = (ms: number) => `${Math.round(ms / 100) / 10} s`;
  const lines = [
    '',
    `Provider change (${section.drained} drained, ${section.rotated}'s key rotated; ${section.rolledWorkers} ` +
      'workers restarted by rolls)',
    `  steps: ${section.steps.map((step) => `${step.step} ${at(step.atMs)}`).join(', ') || 'none'}`,
  ];
  if (section.stoppedBy !== null) lines.push(`  stopped: ${section.stoppedBy}`);
  lines.push(
    `  orders a draining destination can verify: ${section.verifiableByDraining}, without a mail: ` +
      `${section.missingAmongVerifiable.length}; customers with two mails or more: ${section.twoOrMore.length}`,
    `  orders last sent to ${section.rotated} under its new key: ${section.sentUnderNewKey}`,
    `  requests refused for their key at ${section.rotated}: ${section.refusedForKey}`,
    `  other customers without a mail: ${section.rest.length}; ${section.opsCommand} lists ` +
      (section.opsListing === null
        ? `nothing (${section.opsFailure ?? 'did not run'})`
        : `${section.opsListing.length}:`),
  );
  for (const entry of section.opsListing ?? []) {
    lines.push(`    ${entry.orderId} ${entry.state}: ${entry.reason}`);
  }
  return lines.join('\n');
}

/** The --failover section: per provider, its mails and attempts; the attempts that failed over, and why. */
function formatFailoverSection(section: FailoverSection): string {
  const lines = [
    '',
    section.outage.forSeconds > 0
      ? `Failover (primary ${section.primary}, down ${section.outage.forSeconds} s from ${section.outage.atSeconds} s)`
      : `Failover (primary ${section.primary}, no outage)`,
  ];
  for (const [provider, facts] of Object.entries(section.providers)) {
    const attempts = Object.entries(facts.attempts)
      .map(([outcome, count]) => `${outcome} ${count}`)
      .join(', ');
    lines.push(
      `  ${provider.padEnd(10)} mails received ${facts.mailsReceived}; attempts: ${attempts || 'none'}`,
    );
  }
  lines.push(`  attempts that failed over: ${section.failedOver.attempts}`);
  for (const [reason, count] of Object.entries(section.failedOver.byReason)) {
    lines.push(`    by the claim's reason  ${reason}: ${count}`);
  }
  for (const [cause, count] of Object.entries(section.failedOver.byCause)) {
    lines.push(`    after                  ${cause}: ${count}`);
  }
  return lines.join('\n');
}
