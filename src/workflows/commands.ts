// Every activity the mail workflow schedules, with its options and why they are what they are. The workflow's
// command sequence is these calls in order; the stored replay histories (test/replay) pin it, so a change to a
// proxy's options here is a change of behaviour.
import { proxyActivities, proxyLocalActivities } from '@temporalio/workflow';
import type { OrderMailActivities } from '../activities';
import { FailureType } from '../shared/failures';
import { verifyActivityTimeoutMs, type VerificationSettings } from '../shared/workflowSettings';

// Claim, record and the read of an attempt's facts are idempotent (fenced by the claim token and attempt), so
// Temporal retries them as long as Postgres takes to answer; 30 s covers the pool's statement (10 s) and
// client (15 s) deadlines. They run as LOCAL activities: two fewer activity tasks and workflow tasks per
// order on the server (docs/benchmarks.md). Safe because a local activity that runs again on a
// workflow-task retry is just a retried claim or record, both fenced. Backoffs from 10 s on wait on a durable
// timer instead of holding the workflow task open during a long Postgres outage.
export const bookkeeping = proxyLocalActivities<OrderMailActivities>({
  startToCloseTimeout: '30 seconds',
  retry: {
    initialInterval: '1 second',
    backoffCoefficient: 2,
    maximumInterval: '30 seconds',
    // Retrying cannot make a missing order appear.
    nonRetryableErrorTypes: [FailureType.OrderNotFound],
  },
  localRetryThreshold: '10 seconds',
});

/**
 * The send: maximumAttempts 1, NEVER retried by Temporal, because a retry after an unknown outcome could send
 * a second mail. Its timeout is the worker's configured send timeout (from the claim), above the transport's
 * own deadline, so the activity ends by its own answer rather than by Temporal's timer.
 */
export function sender(sendTimeoutMs: number) {
  return proxyActivities<OrderMailActivities>({
    startToCloseTimeout: sendTimeoutMs,
    retry: { maximumAttempts: 1 },
  });
}

// Asking again is harmless (a read), so tries back off quickly; 10 s at most keeps a few tries inside the
// verification deadline.
const VERIFY_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
} as const;

/**
 * The provider lookup (verifyOrderMail), retried until the verification deadline (MAIL_VERIFY_DEADLINE_MS,
 * schedule-to-close): past it the answer is inconclusive and the unknown-outcome policy decides
 * (src/workflows/askProvider.ts). Used by the mail workflow and the reconciliation sweep.
 */
export function verifier(verification: VerificationSettings) {
  return proxyActivities<OrderMailActivities>({
    // The lookups' one deadline plus a margin to read Postgres; the activity ends its lookups within it.
    startToCloseTimeout: verifyActivityTimeoutMs(verification),
    scheduleToCloseTimeout: verification.deadlineMs,
    retry: VERIFY_RETRY,
  });
}
