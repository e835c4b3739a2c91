import { continueAsNew, log, proxyActivities, upsertSearchAttributes } from '@temporalio/workflow';
import type {
  ConfirmedOrderCursor,
  ReconcileActivities,
  StuckClaim,
} from '../activities/reconcileActivities';
import { OrderMailStuckOrders } from '../shared/orderMailSearchAttributes';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import { sweptOrphanFacts } from '../shared/unknownOutcomeFacts';
import { askProvider } from './commands';
import type { VerificationWait } from '../activities';

// Each batch is a bounded query plus up to a batch of idempotent starts: retried freely, since a start that
// already happened reports 'already started'. Two minutes leave room for a slow Temporal or Postgres.
const sweep = proxyActivities<ReconcileActivities>({
  startToCloseTimeout: '2 minutes',
  heartbeatTimeout: '30 seconds',
  retry: { initialInterval: '1 second', backoffCoefficient: 2, maximumInterval: '1 minute' },
});

// History stays small whatever the backlog: after this many batches the run continues as new, carrying only
// its cursor and counts. 20 batches are about 120 events; 100,000 waiting orders are 1,000 batches in 50 runs.
const DEFAULT_BATCHES_PER_RUN = 20;
// Closed runs' requests one sweep asks the provider about (together); more wait for the next sweep.
const MAX_ASKS_PER_SWEEP = 10;
// Order ids named on the run's search attribute; the full list is in the run's result.
const MAX_STUCK_ORDERS_SHOWN = 100;

export interface ReconcileInput {
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

export interface SettledStuckClaim extends StuckClaim {
  /**
   * released: it never dispatched, now failed/not_sent; settled: as `settledAs` says; changed: someone acted
   * first.
   */
  settlement: 'released' | 'settled' | 'changed';
  /** How a dispatched claim was settled: verified accepted, verified not sent, or by the policy. */
  settledAs?: 'verified-accepted' | 'verified-not-sent' | 'policy' | 'not-sent' | 'retry-under-key';
}

export interface ReconcileReport {
  found: number;
  started: number;
  /** Orders whose only run closed before its first claim (no log row), started again. */
  restarted: number;
  /**
   * Orders whose run, started again by a sweep, closed again without a log row: not started again, named
   * here (the first MAX_STUCK_ORDERS_SHOWN) and on the OrderMailStuckOrders search attribute.
   */
  closedWithoutRow: string[];
  alreadyStarted: number;
  batches: number;
  /** Orders not started because a workflow of another type holds their id; each is logged by the activity. */
  conflicts: number;
  /** Rows that were stuck in 'sending' under a closed run, and what the sweep did with each. */
  stuck: SettledStuckClaim[];
  /** More 'sending' rows than one sweep examines; the oldest were examined. */
  moreSendingRows: boolean;
  /**
   * Dispatched claims of closed runs left for a later sweep: too young for the provider to be asked yet, or
   * beyond the asks of one sweep.
   */
  leftForLater: number;
}

/**
 * The reconciliation sweep (docs/design.md §7, G3), run by a Schedule every few minutes (`npm run setup`):
 * starts `orderConfirmationMail` for confirmed orders past the grace period that have no log row, in bounded
 * batches, and settles rows stuck in 'sending' whose run is closed (terminated, cancelled without cleanup),
 * with the claim's fences: never dispatched → released as failed/not_sent, so the next retry or reset sends
 * it (the sweep does not start the mail itself: a terminate is an operator's decision about this run, which
 * the sweep only makes true in the row); dispatched → where the provider can be asked, looked up first
 * (found: sent/accepted; not found: failed/not_sent, for a retry to send), else and when that cannot decide
 * settled by the policy: the facts are gathered here (sweptOrphanFacts) and decided by the same function as
 * the workflow's own unknowns. Each lands in the audit trail and on the OrderMailStuckOrders search attribute. Running it twice changes nothing: every start is idempotent, every settlement fenced.
 */
export async function reconcileOrderMails(input: ReconcileInput = {}): Promise<ReconcileReport> {
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
      MAX_STUCK_ORDERS_SHOWN,
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
  const stuck: SettledStuckClaim[] = [];
  const { verification } = found;
  const askable = (claim: StuckClaim): claim is StuckClaim & { sendKey: string } =>
    claim.dispatched && claim.sendKey !== null && verification !== null;
  // Where the provider can be asked, a dispatched request is looked up first (the activity found it old enough
  // for the provider's log to be trusted), a few at a time and together: each ask may take up to the
  // verification deadline, and a sweep asking a hundred in a row through a lookup outage would hold off the
  // next sweeps (and their starts of missed orders) for hours. The rest wait for a later sweep.
  const asked = found.stuck.filter(askable).slice(0, MAX_ASKS_PER_SWEEP);
  // An answer of "wait" (too early for "not found" to count, by the attempt's own send timeout) leaves the
  // claim for a later sweep, like one found too young.
  const answers = new Map<string, VerificationAnswer | VerificationWait>(
    await Promise.all(
      asked.map(
        async (claim) =>
          [
            claim.orderId,
            await askProvider(
              verification!,
              {
                orderId: claim.orderId,
                claimToken: claim.seen.claimToken,
                attempt: claim.attempts,
                sendKey: claim.sendKey,
                requestMayLastMs: found.requestMayLastMs,
              },
              { waitForEvidence: false },
            ),
          ] as const,
      ),
    ),
  );
  let leftForLater = found.youngerThanSettleDelay;
  for (const claim of found.stuck) {
    const asked = answers.get(claim.orderId);
    const answer = asked?.kind === 'wait' ? undefined : asked;
    if (askable(claim) && answer === undefined) {
      leftForLater += 1;
      continue;
    }
    // No attempt follows a closed run's claim here, so what the provider cannot decide goes to the policy:
    // decideUnknownOutcome decides by these facts, in the activity, and says how.
    const facts = sweptOrphanFacts({
      dispatched: claim.dispatched,
      policy: found.unknownOutcomePolicy,
      ...(answer === undefined ? {} : { answer }),
    });
    const settled = await sweep.settleClosedRunClaim({ claim, facts });
    stuck.push({
      ...claim,
      settlement: settled.kind,
      ...(settled.kind === 'settled' ? { settledAs: settled.decision.kind } : {}),
    });
  }
  if (stuck.length > 0 || counted.closedWithoutRow.length > 0) {
    upsertSearchAttributes([
      {
        key: OrderMailStuckOrders,
        value: [...stuck.map((claim) => claim.orderId), ...counted.closedWithoutRow].slice(
          0,
          MAX_STUCK_ORDERS_SHOWN,
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
  if (stuck.length > 0) {
    log.warn('Order mails were stuck in sending under a closed run; settled', {
      orders: stuck.map((claim) => `${claim.orderId}: ${claim.settledAs ?? claim.settlement}`),
      hint: 'a released mail is sent by: npm run ops -- retry <orderId> --reason "…"',
    });
  }
  const noMail = stuck.filter((claim) => claim.settledAs === 'verified-not-sent');
  if (noMail.length > 0) {
    log.warn('The provider has no mail of these closed runs: their customers have none', {
      orders: noMail.map((claim) => claim.orderId),
      hint: 'send each with: npm run ops -- retry <orderId> --reason "…"',
    });
  }
  if (leftForLater > 0) {
    log.info(
      'Claims of closed runs left for a later sweep: too young to ask the provider about, or over this sweep’s asks',
      {
        claims: leftForLater,
      },
    );
  }
  log.info('Reconciliation finished', { ...counted, stuck: stuck.length });
  return { ...counted, stuck, moreSendingRows: more, leftForLater };
}
