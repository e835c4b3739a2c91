import { continueAsNew, log, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type { ConfirmedOrderCursor, SweepActivities, Orphan } from '../activities/sweepActivities';
import { OrderMailStuckOrders } from '../shared/orderMailSearchAttributes';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import { sweptOrphanFacts } from '../shared/unknownOutcomeFacts';
import { askOnce } from './commands';
import type { VerificationWait } from '../activities';

// Idempotent batches, retried freely; two minutes leave room for a slow Temporal or Postgres.
const sweep = proxyActivities<SweepActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// Keeps each history small whatever the backlog (figures: docs/design.md §7).
const DEFAULT_BATCHES_PER_RUN = 20;
const MAX_ASKS_PER_SWEEP = 10;
const MAX_ALERT_ORDERS_SHOWN = 100;

export interface SweepInput {
  /** Set only by continue-as-new: where the previous run of this sweep stopped, and what it counted. */
  resumeAfter?: ConfirmedOrderCursor;
  counted?: {
    found: number;
    started: number;
    restarted: number;
    closedWithoutRow: string[];
    alreadyStarted: number;
    batches: number;
    /** Orders not started because a workflow of another type holds their id. */
    conflicts: number;
  };
  /** Batches before continuing as new; the schedule leaves it at the default. */
  batchesPerRun?: number;
}

export interface SettledOrphan extends Orphan {
  settlement: 'released' | 'settled' | 'changed';
  settledAs?: 'verified-accepted' | 'verified-not-sent' | 'policy' | 'not-sent' | 'retry-under-key';
}

export interface SweepReport {
  found: number;
  started: number;
  restarted: number;
  /** Started again once already and closed again without a row: named, not started again. */
  closedWithoutRow: string[];
  alreadyStarted: number;
  batches: number;
  conflicts: number;
  stuck: SettledOrphan[];
  moreSendingRows: boolean;
  leftForLater: number;
}

/**
 * The reconciliation sweep (docs/design.md §7, G3): starts missed mails, settles orphans with
 * the claim's fences. Running it twice changes nothing.
 */
export async function reconcileOrderMails(input: SweepInput = {}): Promise<SweepReport> {
  const counted = {
    ...(input.counted ?? {
      found: 0,
      started: 0,
      restarted: 0,
      closedWithoutRow: [],
      alreadyStarted: 0,
      batches: 0,
      conflicts: 0,
    }),
  };
  let after: ConfirmedOrderCursor | null = input.resumeAfter ?? null;
  const batchesPerRun = input.batchesPerRun ?? DEFAULT_BATCHES_PER_RUN;
  for (let batch = 0; batch < batchesPerRun; batch++) {
    const result = await sweep.startMailsForConfirmedOrders({ after });
    counted.found += result.found;
    counted.started += result.started;
    counted.restarted += result.restarted;
    counted.closedWithoutRow = [...counted.closedWithoutRow, ...result.closedWithoutRow].slice(
      0,
      MAX_ALERT_ORDERS_SHOWN,
    );
    counted.alreadyStarted += result.alreadyStarted;
    counted.batches += 1;
    if (result.conflicts.length > 0) {
      counted.conflicts += result.conflicts.length;
      log.warn('Order mails not started: their workflow ids are held by workflows of another type', {
        conflicts: result.conflicts,
      });
    }
    after = result.next;
    if (after === null) break;
  }
  if (after !== null) {
    log.info('Reconciliation continues as new after a full run of batches', { ...counted });
    return continueAsNew<typeof reconcileOrderMails>({ resumeAfter: after, counted, batchesPerRun });
  }

  const found = await sweep.findStuckMailClaims();
  const { more } = found;
  const orphans: SettledOrphan[] = [];
  const { verification } = found;
  const askable = (orphan: Orphan): orphan is Orphan & { sendKey: string } =>
    orphan.dispatched && orphan.sendKey !== null && verification !== null;
  // A few asks, together: a hundred in a row through a lookup outage would hold off later sweeps for hours.
  const asked = found.stuck.filter(askable).slice(0, MAX_ASKS_PER_SWEEP);
  // "wait" leaves the orphan for a later sweep, like one found too young.
  const answers = new Map<string, VerificationAnswer | VerificationWait>(
    await Promise.all(
      asked.map(
        async (orphan) =>
          [
            orphan.orderId,
            await askOnce(verification!, {
              orderId: orphan.orderId,
              claimToken: orphan.seen.claimToken,
              attempt: orphan.attempts,
              sendKey: orphan.sendKey,
              requestMayLastMs: found.requestMayLastMs,
            }),
          ] as const,
      ),
    ),
  );
  let leftForLater = found.youngerThanSettleDelay;
  for (const orphan of found.stuck) {
    const asked = answers.get(orphan.orderId);
    const answer = asked?.kind === 'wait' ? undefined : asked;
    if (askable(orphan) && answer === undefined) {
      leftForLater += 1;
      continue;
    }
    // No attempt follows here, so what the provider cannot decide goes to the policy.
    const facts = sweptOrphanFacts({
      dispatched: orphan.dispatched,
      policy: found.unknownOutcomePolicy,
      ...(answer === undefined ? {} : { answer }),
    });
    const settled = await sweep.settleClosedRunClaim({ claim: orphan, facts });
    orphans.push({
      ...orphan,
      settlement: settled.kind,
      ...(settled.kind === 'settled' ? { settledAs: settled.decision.kind } : {}),
    });
  }
  if (orphans.length > 0 || counted.closedWithoutRow.length > 0) {
    upsertSearchAttributes([
      {
        key: OrderMailStuckOrders,
        value: [...orphans.map((orphan) => orphan.orderId), ...counted.closedWithoutRow].slice(
          0,
          MAX_ALERT_ORDERS_SHOWN,
        ),
      },
    ]);
  }
  if (counted.closedWithoutRow.length > 0) {
    log.warn('Order mails left with no log row and no open run: their restarted run closed before claiming', {
      orders: counted.closedWithoutRow,
      hint: 'see why (npm run ops -- status <orderId>), fix it, then: npm run ops -- retry <orderId> --reason "…"',
    });
  }
  if (orphans.length > 0) {
    log.warn('Orphans settled', {
      orders: orphans.map((orphan) => `${orphan.orderId}: ${orphan.settledAs ?? orphan.settlement}`),
      hint: 'a released mail is sent by: npm run ops -- retry <orderId> --reason "…"',
    });
  }
  const noMail = orphans.filter((orphan) => orphan.settledAs === 'verified-not-sent');
  if (noMail.length > 0) {
    log.warn('The provider has no mail of these orphans: their customers have none', {
      orders: noMail.map((orphan) => orphan.orderId),
      hint: 'send each with: npm run ops -- retry <orderId> --reason "…"',
    });
  }
  if (leftForLater > 0) {
    log.info(
      'Orphans left for a later sweep: too young to ask the provider about, or over this sweep’s asks',
      {
        claims: leftForLater,
      },
    );
  }
  log.info('Reconciliation finished', { ...counted, orphans: orphans.length });
  return { ...counted, stuck: orphans, moreSendingRows: more, leftForLater };
}
