// Verification waits, from the mail workflow: wait the provider's settle delay (or until a provider event of
// the send asks for an early lookup), then ask the provider (askProvider). Used for this run's own unknown
// sends and for an orphan: an attempt a closed run dispatched and never recorded.
import { condition, defineSignal, log, setHandler } from '@temporalio/workflow';
import { PROVIDER_EVENT_SIGNAL } from '../shared/workflowContract';
import type { VerificationAnswer } from '../shared/unknownOutcome';
import type { VerificationSettings } from '../shared/workflowSettings';
import { askProvider, type EarlyAsk } from './askProvider';
import type { AttemptRef, OrphanToVerify, Step } from './attemptStep';
import { bookkeeping } from './commands';

// A provider webhook event of the send in flight (PROVIDER_EVENT_SIGNAL, sent by the workers:
// src/verification/earlyLookups.ts) ends the verification's wait early: the lookup is asked now, and its answer
// judged as ever, so an event settles nothing alone. At most this many early asks per run, so a stream of
// events (each early ask an activity in the run's history) cannot grow it without end.
const MAX_EARLY_ASKS = 3;
const providerEventSignal = defineSignal(PROVIDER_EVENT_SIGNAL);

/** Listens for PROVIDER_EVENT_SIGNAL: an event asks for an early lookup, at most MAX_EARLY_ASKS times per run. */
export function earlyAskOnProviderEvents(): EarlyAsk {
  let eventSeen = false;
  let asked = 0;
  setHandler(providerEventSignal, () => {
    eventSeen = true;
  });
  return {
    requested: () => eventSeen && asked < MAX_EARLY_ASKS,
    taken: () => {
      eventSeen = false;
      asked += 1;
    },
  };
}

/**
 * Waits the provider's settle delay on a durable timer (until then its log may not show the send, so "not
 * found" would mean nothing), then asks it with the verify activity, retried until the verification
 * deadline. A cancel during the wait, or a lookup that keeps failing past its deadline, leaves it
 * inconclusive, and the policy decides.
 */
export async function verifyWithProvider(
  base: AttemptRef,
  sendKey: string,
  verification: VerificationSettings,
  cancelRequested: () => boolean,
  early: EarlyAsk,
  /**
   * The run's own send: how long after the fence its request was seen to end, where it was. A closed run's
   * attempt (verifyOrphan): how long to wait, and how long its request may have lasted.
   */
  own: { requestEndedWithinMs?: number },
  orphan?: { waitMs: number; requestMayLastMs: number },
): Promise<VerificationAnswer> {
  log.info('Order mail outcome unknown; waiting the settle delay before asking the provider', {
    orderId: base.orderId,
    attempt: base.attempt,
    settleDelayMs: verification.settleDelayMs,
    ...(orphan === undefined ? {} : { waitMs: orphan.waitMs }),
  });
  // The run's own attempt waits the settle delay; a closed run's, what is left of its send timeout and the
  // settle delay since its dispatch (maybe nothing). A cancel that came first needs no timer; a provider
  // event of the send ends the wait early (EarlyAsk): the lookup is asked now.
  const waitMs = orphan?.waitMs ?? verification.settleDelayMs;
  const wake = (): boolean => cancelRequested() || early.requested();
  const woke = cancelRequested() || (waitMs > 0 && (await condition(wake, waitMs)));
  if (woke && cancelRequested()) {
    return { kind: 'inconclusive', reason: 'the run was cancelled before the settle delay had passed' };
  }
  if (woke) {
    early.taken();
    log.info('A provider event of this send arrived; asking the provider now', {
      orderId: base.orderId,
      attempt: base.attempt,
    });
  }
  return askProvider(
    verification,
    {
      ...base,
      sendKey,
      ...own,
      ...(orphan === undefined ? {} : { requestMayLastMs: orphan.requestMayLastMs }),
    },
    { cancelRequested, early },
  );
}

/**
 * A closed run (reset or terminated) dispatched an attempt and never recorded it. Rather than settle it by
 * the policy (which may leave the customer without a mail, or send a second one), ask the provider, as for
 * this run's own unknown sends: wait until its send timeout and the settle delay have passed since that
 * dispatch (nobody saw its request end), look the send up by its key, and settle the attempt with the answer. The claim then sends, or finds the mail sent.
 */
export async function verifyOrphan(
  orderId: string,
  orphan: OrphanToVerify,
  cancelRequested: () => boolean,
  early: EarlyAsk,
): Promise<Step> {
  const verification = orphan.settings.verification;
  if (verification === null) throw new Error('unreachable: the claim hands back an orphan only to verify it');
  // Nobody waited for the closed run's send: its request may have been under way until its send timeout, and
  // the provider's log is trusted only the settle delay after that.
  const requestMayLastMs = orphan.settings.sendTimeoutMs;
  const waitMs = Math.max(0, requestMayLastMs + verification.settleDelayMs - orphan.sinceDispatchMs);
  const answer = await verifyWithProvider(
    { orderId, claimToken: orphan.holder, attempt: orphan.attempt },
    orphan.sendKey,
    verification,
    cancelRequested,
    early,
    {},
    { waitMs, requestMayLastMs },
  );
  if (cancelRequested() && answer.kind === 'inconclusive') {
    // Cancelled before the provider was asked: settling now would record the policy as if asking had failed.
    // The row stays the closed run's, and the reconciliation sweep asks about it (docs/design.md §7).
    return { kind: 'orphan-left', attempt: orphan.attempt };
  }
  const settled = await bookkeeping.settleVerifiedOrphanAttempt({
    orderId,
    holder: orphan.holder,
    attempt: orphan.attempt,
    answer,
    policy: orphan.settings.unknownOutcomePolicy,
    issuedAtMs: Date.now(),
  });
  return {
    kind: 'orphan-settled',
    attempt: orphan.attempt,
    settledAs: settled.kind === 'settled' ? settled.decision : null,
  };
}
