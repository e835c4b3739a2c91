// Asking the provider whether a send reached it, from workflow code: the verify activity, retried (asking
// again is harmless) until the verification deadline (MAIL_VERIFY_DEADLINE_MS), after which the answer is
// inconclusive and the policy decides. One place for the mail workflow (its own unknowns, a closed run's) and
// the reconciliation sweep (a terminated run's).
//
// The activity may answer "wait": the lookup found nothing, but too early for that to count (the attempt's
// request may have lasted until its send timeout: a second execution that found it ALREADY_DISPATCHED, a
// closed run's). The mail workflow waits on a durable timer and asks again, a few times at most; the sweep
// leaves the claim for a later sweep instead (waitForEvidence: false).
import { ActivityFailure, condition, TimeoutFailure } from '@temporalio/workflow';
import type { VerificationWait, VerifyOrderMailInput } from '../activities';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import type { VerificationSettings } from '../shared/workflowSettings';
import { verifier } from './commands';

// A "wait" names the moment "not found" may count (one wait normally suffices), or asks again a settle delay
// later because the lookup shows no fresher known send yet (src/evidence/freshnessCheck.ts), which the activity
// bounds by MAIL_VERIFY_DEADLINE_MS and then calls inconclusive. This cap only keeps a history finite should
// clocks disagree; past it the answer is inconclusive and the policy decides.
const MAX_EVIDENCE_WAITS = 24;

/**
 * A provider webhook event of the send arrived (PROVIDER_EVENT_SIGNAL, src/verification/earlyLookups.ts): a
 * wait ends early and the lookup is asked at once. The answer is judged as any other, so it settles nothing
 * that asking at the end of the wait would not have; an early ask is not counted as one of the waits.
 */
export interface EarlyAsk {
  /** Whether an event came since the last early ask (and this run may still act on one). */
  requested(): boolean;
  /** The early ask is being made: a later wait ends early only for a later event. */
  taken(): void;
}

export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options: { waitForEvidence: false },
): Promise<VerificationAnswer | VerificationWait>;
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options?: { waitForEvidence?: true; cancelRequested?: () => boolean; early?: EarlyAsk },
): Promise<VerificationAnswer>;
export async function askProvider(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
  options: { waitForEvidence?: boolean; cancelRequested?: () => boolean; early?: EarlyAsk } = {},
): Promise<VerificationAnswer | VerificationWait> {
  let lastWait: VerificationWait | null = null;
  for (let waits = 0; ;) {
    const answer = await askOnce(verification, waits === 0 ? input : { ...input, evidenceWaits: waits });
    if (answer.kind !== 'wait' || options.waitForEvidence === false) {
      // The answer says that it waited and why, so the attempt's audit row does (describeUnknownDecision).
      return lastWait === null || answer.kind === 'wait'
        ? answer
        : { ...answer, waited: { times: waits, reason: lastWait.reason } };
    }
    lastWait = answer;
    if (waits >= MAX_EVIDENCE_WAITS) {
      return { kind: 'inconclusive', reason: `still too early after ${waits} waits: ${answer.reason}` };
    }
    const cancelRequested = options.cancelRequested ?? (() => false);
    const early = options.early;
    const woke = await condition(() => cancelRequested() || (early?.requested() ?? false), answer.waitMs);
    if (woke && cancelRequested()) {
      return { kind: 'inconclusive', reason: `the run was cancelled while waiting: ${answer.reason}` };
    }
    if (woke) early?.taken();
    else waits++;
  }
}

async function askOnce(
  verification: VerificationSettings,
  input: VerifyOrderMailInput,
): Promise<VerificationAnswer | VerificationWait> {
  try {
    return await verifier(verification).verifyOrderMail(input);
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
