// Plain-text output of the operator CLI. Every line is something an operator acts on; --json gives the same
// facts to scripts.
import type { ObservedResetRow, OperatorActRow } from '../db/operatorActs';
import type { MailLogRow } from '../db/orderMailLog';
import type { BulkDryRun, BulkProgress, BulkRunResult } from './bulkActs';
import type { ListedOrderMail } from './listOrderMails';
import type { OrderMailStatus } from './orderMailStatus';
import type { RetryResult } from './retryOrderMail';

export function formatStatus(status: OrderMailStatus): string {
  const lines = [`Order ${status.orderId}`];
  lines.push(`  mail log:   ${status.row === null ? 'no row (never claimed)' : describeRow(status.row)}`);
  if (status.row?.lastError) lines.push(`  last error: ${status.row.lastError}`);
  if (status.workflow === null) {
    lines.push('  workflow:   none (never started, or closed longer ago than the namespace retention)');
  } else {
    const { workflow } = status;
    const closed = workflow.closeTime === null ? '' : `, closed ${workflow.closeTime.toISOString()}`;
    lines.push(
      `  workflow:   ${workflow.status}, run ${workflow.runId}, started ${workflow.startTime.toISOString()}${closed}`,
    );
    const shown = Object.entries(workflow.searchAttributes).map(
      ([name, value]) => `${name}=${JSON.stringify(value)}`,
    );
    // The start gives every run `sending`/1; with no row, no attempt has claimed yet (e.g. the order is not visible).
    const fromStart =
      status.row === null && workflow.searchAttributes.OrderMailState === 'sending'
        ? ' (set by the start: no attempt has claimed the order yet)'
        : '';
    if (shown.length > 0) lines.push(`  in the UI:  ${shown.join(' ')}${fromStart}`);
  }
  lines.push(`  Web UI:     ${status.uiUrl}`);
  if (status.attempts.length > 0) {
    lines.push('  attempts:');
    for (const attempt of status.attempts) {
      const http = attempt.httpStatus === null ? '' : ` HTTP ${attempt.httpStatus}`;
      const policy = attempt.unknownPolicy === null ? '' : ` (${attempt.unknownPolicy})`;
      const verified = describeVerification(attempt.verification);
      const error = attempt.error === null ? '' : ` — ${attempt.error}`;
      const via =
        attempt.provider == null
          ? ''
          : ` via ${attempt.provider}${attempt.providerChoice ? ` (${attempt.providerChoice})` : ''}`;
      lines.push(
        `    #${attempt.attempt} ${attempt.finishedAt.toISOString()} ${attempt.state} ${attempt.outcome}${via}${policy}${verified}${http}${error}`,
      );
      if (attempt.late !== null) {
        const id =
          attempt.late.providerMessageId === null ? '' : `, message id ${attempt.late.providerMessageId}`;
        lines.push(
          attempt.late.outcome === 'legacy'
            ? `       then, at ${attempt.late.recordedAt.toISOString()}, the old system's record: ${attempt.late.note ?? '-'}`
            : `       then, at ${attempt.late.recordedAt.toISOString()}, the provider's own answer: ${attempt.late.outcome}${id}`,
        );
      }
    }
  }
  if (status.providerEvents.length > 0) {
    lines.push('  provider events:');
    for (const event of status.providerEvents) {
      const id = event.providerMessageId === null ? '' : ` ${event.providerMessageId}`;
      const reason = event.reason === null ? '' : ` — ${event.reason}`;
      lines.push(`    ${event.occurredAt.toISOString()} ${event.provider} ${event.eventType}${id}${reason}`);
    }
  }
  if (status.acts.length > 0) {
    lines.push('  operator acts:');
    for (const act of status.acts) lines.push(`    ${describeAct(act)}`);
  }
  if (status.observedResets.length > 0) {
    lines.push('  resets made in Temporal (the Web UI, temporal workflow reset), as a worker saw them:');
    for (const reset of status.observedResets) lines.push(`    ${describeObservedReset(reset)}`);
  }
  lines.push(`  next step:  ${status.nextStep}`);
  return lines.join('\n');
}

export function formatList(listed: ListedOrderMail[], filter: string): string {
  if (listed.length === 0) return `No order mails in '${filter}'.`;
  const lines = [`${listed.length} order mail(s) in '${filter}', most recently updated first:`];
  for (const { row, workflowStatus, uiUrl } of listed) {
    const run = workflowStatus === null ? '' : `  workflow ${workflowStatus}`;
    lines.push(`${row.orderId}  ${describeRow(row)}${run}`);
    if (row.lastError) lines.push(`    ${row.lastError}`);
    lines.push(`    ${uiUrl}`);
  }
  return lines.join('\n');
}

export function formatRetry(result: RetryResult): string {
  if (result.kind === 'started') {
    return `Order ${result.orderId}: no workflow to reset (never started, or past retention); started ${
      result.newRunId === null ? '(it was already running)' : `run ${result.newRunId}`
    }. Recorded as act #${result.act.id}.`;
  }
  return (
    `Order ${result.orderId}: reset run ${result.previousRunId} to its first workflow task; the new run is ` +
    `${result.newRunId}. Recorded as act #${result.act.id}. Follow it with: npm run ops -- status ${result.orderId}`
  );
}

export function formatResolve(act: OperatorActRow & { warning?: string }): string {
  const warning = act.warning === undefined ? '' : `\n${act.warning}`;
  return `Order ${act.orderId}: ${describeAct(act)}.${warning}`;
}

/** How an unknown outcome was settled with the provider's help, as the attempt and row lines say it. */
function describeVerification(verification: MailLogRow['verification']): string {
  if (verification === null) return '';
  return verification === 'inconclusive'
    ? ' [verification inconclusive]'
    : ` [verified by the provider's ${verification}]`;
}

function describeRow(row: MailLogRow): string {
  const outcome = row.outcome === null ? '' : `, outcome ${row.outcome}`;
  const policy = row.unknownPolicy === null ? '' : ` (${row.unknownPolicy})`;
  const verified = describeVerification(row.verification);
  const http = row.httpStatus === null ? '' : `, HTTP ${row.httpStatus}`;
  const resends = row.resendCount === 0 ? '' : `, re-sent ${row.resendCount} time(s) by an operator`;
  return `${row.state}${outcome}${policy}${verified}${http}, ${row.attempts} attempt(s)${resends}${describeSecondLook(row)}, updated ${row.updatedAt.toISOString()}`;
}

/** The second look (docs/design.md, "The second look"): done, with what it found, or still pending. */
function describeSecondLook(row: MailLogRow): string {
  if (row.secondLook === 'reopened') {
    return `, second look ${row.secondLookedAt!.toISOString()}: attempt ${row.secondLookAttempt!} proved not sent, reopened and sent again`;
  }
  if (row.secondLook === 'found') {
    return `, second look ${row.secondLookedAt!.toISOString()}: attempt ${row.secondLookAttempt!} found at the provider`;
  }
  const pending =
    row.state === 'sent' &&
    row.outcome === 'unknown' &&
    row.unknownPolicy === 'assume-sent' &&
    row.verification === 'inconclusive' &&
    row.dispatchSendKey !== null &&
    !row.claimToken.startsWith('legacy:');
  return pending ? ', second look pending (while the provider’s lookup still holds it)' : '';
}

function describeAct(act: OperatorActRow): string {
  const change =
    act.act === 'resolve' && act.rowBefore !== null && act.rowAfter !== null
      ? ` (${act.rowBefore.state}/${act.rowBefore.outcome ?? '-'} → ${act.rowAfter.state}/${act.rowAfter.outcome ?? '-'})`
      : '';
  // Who the act said it was, and who the database says wrote it (they differ only on acts from before 0057).
  const dbUser = act.dbSessionUser === null ? '' : ` (database role ${act.dbSessionUser})`;
  const where = act.act === 'reset' ? ' in Temporal (the Web UI, or temporal workflow reset)' : '';
  return `act #${act.id} ${act.actedAt.toISOString()} ${act.act}${where} by ${act.operator}${dbUser}${change}: ${act.reason}`;
}

function describeObservedReset(reset: ObservedResetRow): string {
  const at = (reset.resetAt ?? reset.observedAt).toISOString();
  return (
    `${at} reset of run ${reset.baseRunId} into ${reset.newRunId} (Temporal identity ${reset.temporalIdentity}; ` +
    `recorded by ${reset.recordedBy}): ${reset.reason}`
  );
}

export function formatBulkDryRun(dry: BulkDryRun): string {
  const { bulk } = dry;
  const what = bulk.verb === 'resolve' ? `resolve --as ${bulk.resolveAs}` : 'retry';
  const criteria = Object.entries(bulk.filter)
    .filter(([, value]) => value !== null)
    .map(([name, value]) => `${name}=${String(value)}`);
  return [
    `Bulk act ${bulk.id} (dry run; nothing was changed): ${what} on ${bulk.orderCount} order(s)`,
    `  selected by: ${criteria.join(' ')}`,
    `  selection:   sha256 ${bulk.selectionSha256}`,
    `  orders:      ${dry.orderIds.slice(0, 20).join(', ')}${dry.orderIds.length > 20 ? ', …' : ''}`,
    `  reason:      ${bulk.reason}`,
    `To act on exactly these: npm run ops -- bulk run ${bulk.id}`,
  ].join('\n');
}

export function formatBulkProgress(progress: BulkProgress): string {
  return `[${progress.index}/${progress.total}] order ${progress.orderId}: ${progress.status} (${progress.detail})`;
}

export function formatBulkRun(result: BulkRunResult): string {
  const { bulk } = result;
  const lines = [
    `Bulk act ${bulk.id} ${result.started ? 'ran' : 'resumed'}: ${result.done.length} order(s) acted on, ` +
      `${result.refused.length} refused${result.before > 0 ? `, ${result.before} done or refused before` : ''}.`,
  ];
  for (const { orderId, refusal } of result.refused) lines.push(`  refused ${orderId}: ${refusal}`);
  return lines.join('\n');
}
