import { Context, log } from '@temporalio/activity';
import { ApplicationFailure } from '@temporalio/common';
import { findWitnessCandidate } from '../db/freshnessWitness';
import { readDispatchedAttempt } from '../db/orderMailLog';
import { answerMayDecideLater, askAgainOrGiveUp, checkFreshness } from '../evidence/freshnessCheck';
import {
  judgeLookup,
  judgeWebhookEvents,
  notFoundCountsFrom,
  whyLookupCannotDecide,
  type EvidenceTiming,
} from '../evidence/evidenceRules';
import { FailureType } from '../shared/failures';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import { VERIFICATION_DEFAULTS } from '../verification/verificationConfig';
import { VERIFY_ACTIVITY_MARGIN_MS } from '../shared/workflowSettings';
import { listSendEvents } from '../webhooks/providerEvents';
import { whyCannotAsk } from '../evidence/destination';
import { verifiersOf, type ActivityDependencies } from './dependencies';

export interface VerifyOrderMailInput {
  orderId: string;
  claimToken: string;
  attempt: number;
  /**
   * The key this attempt's request carried (the claim's idempotency key). The key the dispatch fence recorded
   * is used where there is one: it is what the request really carried.
   */
  sendKey: string;
  /**
   * How long after its dispatch the request may still have been under way, as the caller knows it (a closed
   * run's send, which nobody waited for: its send timeout). The attempt's own recorded send timeout is used
   * where the fence recorded one; this only where it did not.
   */
  requestMayLastMs?: number;
  /**
   * How long after the fence this attempt's request was seen to end, by the execution that made it (the run's
   * own send). Absent when nobody saw it end: then "not found" counts only after the whole send timeout.
   */
  requestEndedWithinMs?: number;
  /** How often the caller was told to wait for this attempt already (src/workflows/commands.ts). */
  evidenceWaits?: number;
}

/** "Not found" would not count yet: the caller asks again `waitMs` later (src/workflows/commands.ts). */
export interface VerificationWait {
  kind: 'wait';
  waitMs: number;
  reason: string;
}

export type VerifyOrderMailResult = VerificationAnswer | VerificationWait;

/** Asked again a little after the moment "not found" may count, so the next ask is not early by a hair. */
const WAIT_MARGIN_MS = 250;

/**
 * Asks the provider whether this attempt's send reached it, and judges the answer by the evidence rules
 * (src/evidence/evidenceRules.ts), the same for the workflow's own send, a closed run's attempt taken over and
 * the sweep: asked where the attempt went (the destination its fence recorded), by its own send key, and
 * "not found" only once its request could have ended and the provider's settle delay passed (else: wait).
 * Webhook events of the send count only when they are this attempt's; with a provider that has a lookup they
 * never settle alone. A failing lookup is thrown as a retryable failure: Temporal retries it until the
 * activity's schedule-to-close deadline, and then the policy decides. Read-only at our end and at the
 * provider's, so retrying it is harmless.
 */
export function createVerifyOrderMail(deps: ActivityDependencies) {
  return async function verifyOrderMail(input: VerifyOrderMailInput): Promise<VerifyOrderMailResult> {
    if (verifiersOf(deps).length === 0) {
      return inconclusive(input.orderId, 'this worker has no verification configured (MAIL_VERIFY is off)');
    }
    const read = await readDispatchedAttempt(deps.db, input);
    if (read === null) {
      return inconclusive(
        input.orderId,
        'the attempt is no longer in flight under this run, so there is nothing to verify',
      );
    }
    return judgeDispatchedAttempt(deps, read, input);
  };
}

/** What judging an attempt needs of the activity's dependencies (the verify activity's, or the sweep's). */
export type EvidenceDependencies = Pick<
  ActivityDependencies,
  'db' | 'verifier' | 'verifiers' | 'witnessProber'
> & {
  settings: { sendTimeoutMs: number; verification?: ActivityDependencies['settings']['verification'] | undefined };
};

/**
 * The evidence rules applied to one dispatched attempt, as read with Postgres's now(): the one definition of
 * found / not found / wait / inconclusive, for the verify activity and for the sweep's second look
 * (src/activities/secondLook.ts), which reads a settled attempt instead of one in flight.
 */
export async function judgeDispatchedAttempt(
  deps: EvidenceDependencies,
  read: NonNullable<Awaited<ReturnType<typeof readDispatchedAttempt>>>,
  input: VerifyOrderMailInput,
): Promise<VerifyOrderMailResult> {
  const { orderId } = input;
  const deadline = lookupDeadline();
  const verifiers = verifiersOf(deps);
  if (verifiers.length === 0) {
    return inconclusive(orderId, 'this worker has no verification configured (MAIL_VERIFY is off)');
  }
  // Asked of the provider the attempt went to (failover: maybe not this worker's first), and of no other: its
  // settle delay, its webhook events, its lookup. Where none of this worker's verifiers can ask there, the
  // first one's answer says why it cannot (whyLookupCannotDecide below).
  const recorded = read.attempt.destination;
  const verifier =
    verifiers.find(
      (candidate) => recorded !== null && whyCannotAsk(recorded, candidate.destination) === null,
    ) ??
    verifiers.find((candidate) => candidate.destination.provider === recorded?.provider) ??
    verifiers[0]!;
  const attempt = { ...read.attempt, sendKey: read.recordedSendKey ?? input.sendKey };
  const timing: EvidenceTiming = {
    settleDelayMs: verifier.settleDelayMs,
    retentionMs: verifier.retentionMs,
    ...(input.requestEndedWithinMs === undefined ? {} : { requestEndedWithinMs: input.requestEndedWithinMs }),
    fallbackSendTimeoutMs: Math.max(input.requestMayLastMs ?? 0, deps.settings.sendTimeoutMs),
  };
  // Events of this send from another SES configuration set or account: said in the attempt's audit row.
  let fromElsewhere = 0;
  if (verifier.webhookProvider !== null) {
    const events = await listSendEvents(deps.db, {
      orderId,
      sendKey: attempt.sendKey,
      provider: verifier.webhookProvider,
    });
    const verdict = judgeWebhookEvents({
      attempt,
      events,
      providerHasLookup: verifier.lookup !== null,
      asking: verifier.destination,
    });
    if (verdict.kind === 'none' && verdict.elsewhere > 0) {
      fromElsewhere = verdict.elsewhere;
      log.warn('Provider events naming this send came from another configuration set or account: ignored', {
        orderId,
        attempt: input.attempt,
        elsewhere: verdict.elsewhere,
      });
    }
    if (verdict.kind === 'found') {
      log.info('Order mail verified accepted by a webhook event', {
        orderId,
        attempt: input.attempt,
        event: verdict.event.eventType,
      });
      return { kind: 'found', via: 'webhook', providerMessageId: verdict.event.providerMessageId };
    }
    if (verdict.kind === 'ask-lookup') {
      log.info('A webhook event names this send; the provider lookup decides', {
        orderId,
        attempt: input.attempt,
      });
    }
  }
  if (verifier.lookup === null) {
    // A missing event proves nothing, and before the settle delay has passed it does not even let the policy
    // decide: an early ask (woken by an event that did not count, from elsewhere or of another send) waits on.
    const countsFrom = notFoundCountsFrom(attempt, timing);
    if (read.now.getTime() < countsFrom.getTime()) {
      return {
        kind: 'wait',
        waitMs: countsFrom.getTime() - read.now.getTime() + WAIT_MARGIN_MS,
        reason: `no ${verifier.webhookProvider ?? 'provider'} event of this send counts yet, and its settle delay has not passed`,
      };
    }
    return inconclusive(
      orderId,
      `no ${verifier.webhookProvider ?? 'provider'} event for this send within the settle delay, and a missing ` +
        'event proves nothing (the provider retries its webhooks for hours)' +
        (fromElsewhere === 0
          ? ''
          : `; ${fromElsewhere} event(s) naming it came from another configuration set or account and were ignored`),
    );
  }
  const elsewhere = whyLookupCannotDecide(attempt, verifier.destination);
  if (elsewhere !== null || attempt.destination === null) {
    return inconclusive(orderId, elsewhere ?? 'the attempt has no recorded destination');
  }
  const answer = await verifier.lookup.lookUp(
    { orderId, sendKey: attempt.sendKey, destination: attempt.destination },
    deadline,
  );
  if (answer.kind === 'failed') {
    log.warn('Order mail lookup failed; retried until the verification deadline', {
      orderId,
      attempt: input.attempt,
      reason: answer.reason,
    });
    throw ApplicationFailure.create({
      type: FailureType.VerificationLookupFailed,
      message: answer.reason,
      nonRetryable: false,
      ...(answer.retryAfterMs === null ? {} : { nextRetryDelay: answer.retryAfterMs }),
    });
  }
  // How long a "not found" without a witness, or a list that could not decide, is asked about again.
  const freshnessTiming = {
    deadlineMs: deps.settings.verification?.deadlineMs ?? VERIFICATION_DEFAULTS.MAIL_VERIFY_DEADLINE_MS,
    askAgainAfterMs: verifier.settleDelayMs,
    waitsSoFar: input.evidenceWaits ?? 0,
  };
  // Postgres's now() from before the lookup: the lookup was made at it or later.
  const verdict = judgeLookup({ attempt, asking: verifier.destination, answer, now: read.now, timing });
  switch (verdict.kind) {
    case 'found':
      log.info('Order mail verified accepted by the provider lookup', { orderId, attempt: input.attempt });
      return { kind: 'found', via: 'lookup', providerMessageId: verdict.providerMessageId };
    case 'inconclusive': {
      // A list that was incomplete or held strangers may be answered rightly when asked again.
      if (!answerMayDecideLater(answer, attempt)) return inconclusive(orderId, verdict.reason);
      const again = askAgainOrGiveUp({
        attempt,
        timing,
        freshness: freshnessTiming,
        now: read.now,
        reason: verdict.reason,
      });
      if (again.kind === 'inconclusive') return inconclusive(orderId, again.reason);
      if (again.kind === 'fresh') throw new Error('unreachable: asking again is never fresh');
      return { kind: 'wait', waitMs: again.waitMs, reason: again.reason };
    }
    case 'wait_until': {
      const waitMs = Math.max(0, verdict.until.getTime() - read.now.getTime()) + WAIT_MARGIN_MS;
      log.info('Order mail lookup found nothing yet, too early to count; asking again later', {
        orderId,
        attempt: input.attempt,
        waitMs,
      });
      return { kind: 'wait', waitMs, reason: verdict.reason };
    }
    case 'not_found': {
      // "Not found" counts only with a witness that the lookup has caught up past this attempt's end.
      const lookup = verifier.lookup;
      const freshness = await checkFreshness({
        attempt,
        timing,
        freshness: freshnessTiming,
        now: read.now,
        ordering: verifier.witnessOrdering,
        findCandidate: (bounds) =>
          findWitnessCandidate(deps.db, { orderId, destination: attempt.destination!, bounds }),
        lookUp: (query) => lookup.lookUp(query, deadline),
      });
      if (freshness.kind === 'wait') {
        log.info('Order mail lookup found nothing, but shows no fresher known send; asking again later', {
          orderId,
          attempt: input.attempt,
          waitMs: freshness.waitMs,
        });
        // Nothing sent there since this attempt ended: in a quiet period nothing will be, so a probe is asked
        // for (src/verification/witnessProbe.ts); the next ask may find it as the witness.
        if (freshness.noWitnessFrom !== undefined && deps.witnessProber !== undefined) {
          deps.witnessProber.request({
            orderId,
            destination: attempt.destination,
            attemptEndedAt: freshness.noWitnessFrom,
          });
          // Where a witness must be a settle delay old (Mailgun), the next ask comes a send timeout later than
          // that, so the probe (sent now, ended within it) is old enough then, even at the deadline's last ask.
          if (verifier.witnessOrdering.kind === 'trusted-after') {
            const waitMs = freshness.waitMs + deps.settings.sendTimeoutMs;
            return { kind: 'wait', waitMs, reason: `${freshness.reason}; a witness probe was asked for` };
          }
        }
        return { kind: 'wait', waitMs: freshness.waitMs, reason: freshness.reason };
      }
      if (freshness.kind === 'inconclusive') return inconclusive(orderId, freshness.reason);
      // Asked once more, now that the witness shows: a provider that was behind (or answered from elsewhere)
      // a moment ago and has caught up since would show our message too. Only "not found" again counts.
      const again = await lookup.lookUp(
        { orderId, sendKey: attempt.sendKey, destination: attempt.destination },
        deadline,
      );
      const recheck =
        again.kind === 'failed'
          ? ({ kind: 'inconclusive', reason: again.reason } as const)
          : judgeLookup({ attempt, asking: verifier.destination, answer: again, now: read.now, timing });
      if (recheck.kind === 'found') {
        log.info('Order mail verified accepted by the provider lookup, asked again', { orderId });
        return { kind: 'found', via: 'lookup', providerMessageId: recheck.providerMessageId };
      }
      if (recheck.kind !== 'not_found') {
        const reason =
          'reason' in recheck ? recheck.reason : 'the lookup answered differently when asked again';
        // Bounded like a missing witness: past its deadline the policy decides.
        const next = askAgainOrGiveUp({
          attempt,
          timing,
          freshness: freshnessTiming,
          now: read.now,
          reason: `the lookup found nothing, then could not say so again: ${reason}`,
        });
        if (next.kind === 'wait') return { kind: 'wait', waitMs: next.waitMs, reason: next.reason };
        return inconclusive(orderId, next.kind === 'inconclusive' ? next.reason : reason);
      }
      log.info('Order mail verified not sent: the provider lookup has no message of this send', {
        orderId,
        attempt: input.attempt,
        sinceDispatchMs: verdict.sinceDispatchMs,
        witnessOrderId: freshness.witness.orderId,
      });
      return { kind: 'not-found', via: 'lookup', sinceDispatchMs: verdict.sinceDispatchMs };
    }
  }
}

/**
 * One deadline for every lookup of this try (all pages, the witness, the second ask): the try's start-to-close
 * timeout (verifyActivityTimeoutMs, set by the workflow) less the margin kept for Postgres, so the try ends by
 * its own answer before Temporal times it out. The server caps that timeout at the schedule-to-close deadline;
 * a try shorter than the margin keeps half of it for its lookups.
 */
function lookupDeadline(): AbortSignal {
  const tryMs = Context.current().info.startToCloseTimeoutMs;
  return AbortSignal.timeout(Math.max(tryMs - VERIFY_ACTIVITY_MARGIN_MS, Math.floor(tryMs / 2), 1));
}

function inconclusive(orderId: string, reason: string): VerificationAnswer {
  log.info('Order mail verification inconclusive; the policy decides', { orderId, reason });
  return { kind: 'inconclusive', reason };
}
