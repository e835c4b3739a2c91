// Asking the provider whether a send reached it, from workflow code: the verify activity, retried (asking
// again is harmless) until the verification deadline (MAIL_VERIFY_DEADLINE_MS), after which the answer is
// inconclusive and the policy decides. One place for the mail workflow (its own unknowns, a closed run's) and
// the reconciliation sweep (a terminated run's).
import { ActivityFailure, proxyActivities, TimeoutFailure } from '@temporalio/workflow';
import type { OrderMailActivities, VerifyOrderMailInput } from '../activities';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import type { VerificationSettings } from '../shared/workflowSettings';

// Each try gets the lookup's own deadline plus this, to read Postgres before and after.
const VERIFY_ATTEMPT_MARGIN_MS = 5_000;
const VERIFY_RETRY = {
  initialInterval: '1 second',
  backoffCoefficient: 2,
  maximumInterval: '10 seconds',
} as const;

export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
): Promise<VerificationAnswer> {
  const verifier = proxyActivities<OrderMailActivities>({
    startToCloseTimeout: verification.lookupTimeoutMs + VERIFY_ATTEMPT_MARGIN_MS,
    scheduleToCloseTimeout: verification.deadlineMs,
    retry: VERIFY_RETRY,
  });
  try {
    return await verifier.verifyOrderMail(input);
  } catch (error) {
    if (!(error instanceof ActivityFailure)) throw error;
    // Past the schedule-to-close deadline Temporal stops retrying and hands over the last try's failure
    // (retry state TIMEOUT), or a timeout failure when the last try itself timed out.
    const deadlinePassed = error.retryState === 'TIMEOUT' || error.cause instanceof TimeoutFailure;
    const last = error.cause?.message ? ` (last: ${error.cause.message})` : '';
    return {
      kind: 'inconclusive',
      reason: deadlinePassed
        ? `the lookup did not succeed within its deadline of ${Math.round(verification.deadlineMs / 1000)} s${last}`
        : `verification failed${last}`,
    };
  }
}
