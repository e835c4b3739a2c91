// The unknown-outcome path: how a send that was not accepted gets recorded. Rejected and not-sent are recorded
// as they are; an unknown is decided by decideUnknownOutcome (src/shared/unknownOutcome.ts) from the row's
// facts, after asking the provider where it can be asked.
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type UnknownOutcomeDecision,
  type UnknownOutcomeFacts,
  type VerificationAnswer,
} from '../shared/unknownOutcome';
import type { SendFailureDetails } from '../shared/failures';
import type { OrderMailWorkflowSettings } from '../shared/workflowSettings';
import type { EarlyAsk } from './askProvider';
import type { AttemptRef, Recorded } from './attemptStep';
import { bookkeeping } from './commands';
import { verifyWithProvider } from './verificationWaits';

/**
 * Records a send that was not accepted. Rejected and not-sent are recorded as they are; an unknown outcome is
 * decided by decideUnknownOutcome from the row's facts (did the attempt pass the dispatch fence, how old is
 * the idempotency key), and recorded as decided. Where the provider can be asked (settings.verification), the
 * decision first says "verify": wait the settle delay, ask, and decide again with the answer. Should a stalled
 * send pass the fence in between, the record changes nothing and the decision is made again.
 */
export async function recordNotAccepted(
  base: AttemptRef,
  details: SendFailureDetails,
  settings: OrderMailWorkflowSettings,
  next: {
    anotherAttemptFollows: boolean;
    delayMs: number;
    sendKey: string;
    cancelRequested: () => boolean;
    early: EarlyAsk;
  },
): Promise<{ recorded: Recorded; providerMessageId: string | null; sentNothing: boolean }> {
  const common = { ...base, httpStatus: details.httpStatus };
  if (details.outcome !== 'unknown') {
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...common,
      state: 'failed',
      outcome: details.outcome,
      unknownPolicy: null,
      providerMessageId: null,
      error: details.reason,
      expectDispatched: null,
    });
    if (recorded.kind === 'dispatch-changed')
      throw new Error('unreachable: nothing was expected of the fence');
    return { recorded, providerMessageId: null, sentNothing: details.outcome === 'not_sent' };
  }
  // What the provider said, once asked: asked at most once per attempt.
  let answer: VerificationAnswer | null = null;
  // The fence moves at most once (not dispatched → dispatched), so the second decision stands.
  for (let decided = 0; ; decided++) {
    const attemptFacts = await bookkeeping.readAttemptOutcomeFacts(base);
    const facts: UnknownOutcomeFacts = {
      dispatched: attemptFacts.dispatched,
      policy: settings.unknownOutcomePolicy,
      idempotency: settings.idempotency,
      sinceKeyFirstDispatchMs: attemptFacts.sinceKeyFirstDispatchMs,
      delayBeforeRetryMs: next.delayMs,
      sendTimeoutMs: settings.sendTimeoutMs,
      anotherAttemptFollows: next.anotherAttemptFollows,
      providerError: details.errorCode,
      ...(settings.verification === null ? {} : { verification: { answer } }),
    };
    let step = decideUnknownOutcome(facts);
    if (step.kind === 'verify') {
      answer = await verifyWithProvider(
        base,
        next.sendKey,
        settings.verification!,
        next.cancelRequested,
        next.early,
        {
          // This execution saw its request end: "not found" may count that long after the dispatch, plus the
          // settle delay. Absent (ALREADY_DISPATCHED, a timed-out send): only after the attempt's send timeout.
          ...(details.requestEndedAfterFenceMs === undefined
            ? {}
            : { requestEndedWithinMs: details.requestEndedAfterFenceMs }),
        },
      );
      facts.verification = { answer };
      step = decideUnknownOutcome(facts);
      if (step.kind === 'verify') throw new Error('unreachable: verification answered, yet asked again');
    }
    const decision: UnknownOutcomeDecision = step;
    const described = describeUnknownDecision(decision, facts);
    const providerMessageId = decision.kind === 'verified-accepted' ? decision.providerMessageId : null;
    const recorded = await bookkeeping.recordOrderMailOutcome({
      ...common,
      state: decision.state,
      outcome: decision.outcome,
      unknownPolicy: decision.unknownPolicy,
      verification: decision.verification ?? null,
      providerMessageId,
      error:
        decision.kind === 'not-sent' ? `${described} (${details.reason})` : `${details.reason}; ${described}`,
      expectDispatched: attemptFacts.dispatched,
    });
    // Not sent: the request never left (the fence was not passed), or the provider said it has no such mail.
    const sentNothing = decision.outcome === 'not_sent';
    if (recorded.kind !== 'dispatch-changed') return { recorded, providerMessageId, sentNothing };
    if (decided >= 1) throw new Error('unreachable: the dispatch fence changed twice for one attempt');
  }
}
