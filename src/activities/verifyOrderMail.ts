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
  /** The key this attempt's request carried; the fence's recorded key wins where there is one. */
  sendKey: string;
  /** An orphan's request's possible length after dispatch, where the fence recorded none. */
  requestMayLastMs?: number;
  /** When the run's own send saw its request end, after the fence; absent: the whole send timeout counts. */
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

/** Asks the provider about this attempt, judged by the evidence rules (docs/design.md §5); retryable. */
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
  settings: {
    sendTimeoutMs: number;
    verification?: ActivityDependencies['settings']['verification'] | undefined;
  };
};

/** The evidence rules on one dispatched attempt, for the verify activity and the second look. */
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
  // Asked only where the attempt went (failover: maybe not this worker's first provider).
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
    // A missing event proves nothing: before the settle delay an early ask waits on (docs/design.md §5).
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
        // Nothing sent there since this attempt ended: ask for a witness probe (src/verification/witnessProbe.ts).
        if (freshness.noWitnessFrom !== undefined && deps.witnessProber !== undefined) {
          deps.witnessProber.request({
            orderId,
            destination: attempt.destination,
            attemptEndedAt: freshness.noWitnessFrom,
          });
          // Mailgun's witness must be a settle delay old: the next ask, a send timeout later, finds the probe old enough.
          if (verifier.witnessOrdering.kind === 'trusted-after') {
            const waitMs = freshness.waitMs + deps.settings.sendTimeoutMs;
            return { kind: 'wait', waitMs, reason: `${freshness.reason}; a witness probe was asked for` };
          }
        }
        return { kind: 'wait', waitMs: freshness.waitMs, reason: freshness.reason };
      }
      if (freshness.kind === 'inconclusive') return inconclusive(orderId, freshness.reason);
      // Asked again now the witness shows: a provider behind a moment ago shows our message too if it has it.
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

/** One deadline for all lookups of this try: its timeout less Postgres's margin (half, if shorter than it). */
function lookupDeadline(): AbortSignal {
  const tryMs = Context.current().info.startToCloseTimeoutMs;
  return AbortSignal.timeout(Math.max(tryMs - VERIFY_ACTIVITY_MARGIN_MS, Math.floor(tryMs / 2), 1));
}

function inconclusive(orderId: string, reason: string): VerificationAnswer {
  log.info('Order mail verification inconclusive; the policy decides', { orderId, reason });
  return { kind: 'inconclusive', reason };
}
