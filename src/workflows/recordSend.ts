// How an attempt's send outcome gets recorded. Accepted, rejected and not-sent are recorded as they are; an
// unknown is decided by decideUnknownOutcome (src/shared/unknownOutcome.ts) from the row's facts, after asking
// the provider where it can be asked.
import type { SendAccepted, SendNotAccepted } from '../shared/sendOutcome';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import { ownAttemptFacts, type AttemptOnRecord } from '../shared/unknownOutcomeFacts';
import { delayBeforeNextAttempt } from '../shared/workflowSettings';
import type { EarlyAsk } from './askProvider';
import type { AttemptRef, Claimed, Recorded } from './attemptStep';
import { bookkeeping } from './commands';
import { verifyWithProvider } from './verificationWaits';

export interface Recording {
  recorded: Recorded;
  /** The accepted mail's id: the provider's answer, or what verification found; null when none is known. */
  providerMessageId: string | null;
  /** The attempt made no request, or the provider said (or was verified to say) it took nothing. */
  sentNothing: boolean;
}

/**
 * Records the send's outcome. An unknown outcome is decided by decideUnknownOutcome from the row's facts (did
 * the attempt pass the dispatch fence, how old is the idempotency key), and recorded as decided. Where the
 * provider can be asked (settings.verification), the decision first says "verify": wait the settle delay, ask,
 * and decide again with the answer. Should a stalled send pass the fence in between, the record changes
 * nothing and the decision is made again.
 */
export async function recordSendOutcome(
  base: AttemptRef,
  sent: SendAccepted | SendNotAccepted,
  claim: Claimed,
  run: { runAttempts: number; cancelRequested: () => boolean; early: EarlyAsk },
): Promise<Recording> {
  if (sent.outcome !== 'unknown') {
    const accepted = sent.outcome === 'accepted';
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...base,
      state: accepted ? 'sent' : 'failed',
      outcome: sent.outcome,
      unknownPolicy: null,
      providerMessageId: accepted ? sent.providerMessageId : null,
      httpStatus: sent.httpStatus,
      error: accepted ? null : sent.reason,
      expectDispatched: null,
    });
    if (recorded.kind === 'dispatch-changed')
      throw new Error('unreachable: nothing was expected of the fence');
    return {
      recorded,
      providerMessageId: accepted ? sent.providerMessageId : null,
      sentNothing: sent.outcome === 'not_sent',
    };
  }
  const { settings } = claim;
  // Judged as the send came back, before any wait: how long a retry would wait, and whether one follows.
  const delayBeforeRetryMs = delayBeforeNextAttempt(settings, run.runAttempts + 1, sent.retryAfterMs);
  const anotherAttemptFollows = !run.cancelRequested() && run.runAttempts + 1 < settings.maxSendAttempts;
  const facts = (attempt: AttemptOnRecord, answer: VerificationAnswer | null) =>
    ownAttemptFacts({
      attempt,
      settings,
      delayBeforeRetryMs,
      anotherAttemptFollows,
      providerError: sent.errorCode,
      answer,
    });
  // What the provider said, once asked: asked at most once per attempt.
  let answer: VerificationAnswer | null = null;
  // The fence moves at most once (not dispatched → dispatched), so the second decision stands.
  for (let decided = 0; ; decided++) {
    const attempt = await bookkeeping.readAttemptOutcomeFacts(base);
    let step = decideUnknownOutcome(facts(attempt, answer));
    if (step.kind === 'verify') {
      answer = await verifyWithProvider(
        base,
        claim.idempotencyKey,
        settings.verification!,
        run.cancelRequested,
        run.early,
        {
          // This execution saw its request end: "not found" may count that long after the dispatch, plus the
          // settle delay. Null (ALREADY_DISPATCHED, a timed-out send): only after the attempt's send timeout.
          ...(sent.requestEndedAfterFenceMs === null
            ? {}
            : { requestEndedWithinMs: sent.requestEndedAfterFenceMs }),
        },
      );
      step = decideUnknownOutcome(facts(attempt, answer));
      if (step.kind === 'verify') throw new Error('unreachable: verification answered, yet asked again');
    }
    const decision = step;
    const described = describeUnknownDecision(decision, facts(attempt, answer));
    const providerMessageId = decision.kind === 'verified-accepted' ? decision.providerMessageId : null;
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...base,
      httpStatus: sent.httpStatus,
      state: decision.state,
      outcome: decision.outcome,
      unknownPolicy: decision.unknownPolicy,
      verification: decision.verification ?? null,
      providerMessageId,
      error: decision.kind === 'not-sent' ? `${described} (${sent.reason})` : `${sent.reason}; ${described}`,
      expectDispatched: attempt.dispatched,
    });
    // Not sent: the request never left (the fence was not passed), or the provider said it has no such mail.
    const sentNothing = decision.outcome === 'not_sent';
    if (recorded.kind !== 'dispatch-changed') return { recorded, providerMessageId, sentNothing };
    if (decided >= 1) throw new Error('unreachable: the dispatch fence changed twice for one attempt');
  }
}
