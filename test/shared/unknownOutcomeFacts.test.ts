// The facts each situation decides an unknown outcome from (src/shared/unknownOutcomeFacts.ts), as a table:
// what each builder makes of its inputs, and what decideUnknownOutcome then decides. The decision itself is
// test/shared/unknownOutcome.test.ts.
import { describe, expect, it } from 'vitest';
import {
  decideUnknownOutcome,
  type UnknownOutcomeFacts,
  type VerificationAnswer,
} from '../../src/shared/unknownOutcome';
import {
  deferredUnknownFacts,
  orphanFactsAtClaim,
  ownAttemptFacts,
  sweptOrphanFacts,
  verifiedOrphanFacts,
} from '../../src/shared/unknownOutcomeFacts';

const HOUR = 60 * 60 * 1000;
const RESEND = { windowMs: 24 * HOUR, safetyMarginMs: HOUR };
const VERIFY = { settleDelayMs: 30_000, lookupTimeoutMs: 5_000, deadlineMs: 600_000 };
const FOUND: VerificationAnswer = { kind: 'found', via: 'lookup', providerMessageId: 'msg-1' };
const NOT_FOUND: VerificationAnswer = { kind: 'not-found', via: 'lookup', sinceDispatchMs: 90_000 };
const INCONCLUSIVE: VerificationAnswer = { kind: 'inconclusive', reason: 'the lookup kept failing' };

/** Nothing about a retry under the key: what the builders give where none can follow. */
const NO_RETRY_UNDER_KEY = {
  idempotency: null,
  sinceKeyFirstDispatchMs: null,
  delayBeforeRetryMs: 0,
  sendTimeoutMs: 0,
};

const own = (overrides: Partial<Parameters<typeof ownAttemptFacts>[0]> = {}) =>
  ownAttemptFacts({
    attempt: { dispatched: true, sinceKeyFirstDispatchMs: 2_000 },
    settings: {
      unknownOutcomePolicy: 'assume-sent',
      idempotency: null,
      sendTimeoutMs: 8_000,
      verification: null,
    },
    delayBeforeRetryMs: 1_000,
    anotherAttemptFollows: true,
    providerError: 'ECONNRESET',
    answer: null,
    ...overrides,
  });

describe('the facts of each situation', () => {
  it.each<[string, UnknownOutcomeFacts, UnknownOutcomeFacts]>([
    [
      'the run’s own attempt: the row, its settings, its backoff, the send’s error; nothing to ask',
      own(),
      {
        dispatched: true,
        policy: 'assume-sent',
        idempotency: null,
        sinceKeyFirstDispatchMs: 2_000,
        delayBeforeRetryMs: 1_000,
        sendTimeoutMs: 8_000,
        anotherAttemptFollows: true,
        providerError: 'ECONNRESET',
      },
    ],
    [
      'the run’s own attempt where the provider can be asked: verification, unanswered until asked',
      own({
        attempt: { dispatched: false, sinceKeyFirstDispatchMs: null },
        settings: {
          unknownOutcomePolicy: 'assume-failed',
          idempotency: RESEND,
          sendTimeoutMs: 8_000,
          verification: VERIFY,
        },
        anotherAttemptFollows: false,
      }),
      {
        dispatched: false,
        policy: 'assume-failed',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: null,
        delayBeforeRetryMs: 1_000,
        sendTimeoutMs: 8_000,
        anotherAttemptFollows: false,
        providerError: 'ECONNRESET',
        verification: { answer: null },
      },
    ],
    [
      'an orphan found by the claim: dispatched, this run follows at once, nobody saw its answer',
      orphanFactsAtClaim({
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 3 * HOUR,
        sendTimeoutMs: 8_000,
        canVerify: false,
      }),
      {
        dispatched: true,
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 3 * HOUR,
        delayBeforeRetryMs: 0,
        sendTimeoutMs: 8_000,
        anotherAttemptFollows: true,
        providerError: null,
      },
    ],
    [
      'an orphan found by a claimer that can ask its provider: verification, unanswered',
      orphanFactsAtClaim({
        policy: 'assume-failed',
        idempotency: null,
        sinceKeyFirstDispatchMs: 5_000,
        sendTimeoutMs: 8_000,
        canVerify: true,
      }),
      {
        dispatched: true,
        policy: 'assume-failed',
        idempotency: null,
        sinceKeyFirstDispatchMs: 5_000,
        delayBeforeRetryMs: 0,
        sendTimeoutMs: 8_000,
        anotherAttemptFollows: true,
        providerError: null,
        verification: { answer: null },
      },
    ],
    [
      'an orphan once asked: the answer, no retry under the key, the run claims again',
      verifiedOrphanFacts({ policy: 'assume-sent', answer: FOUND }),
      {
        dispatched: true,
        policy: 'assume-sent',
        ...NO_RETRY_UNDER_KEY,
        anotherAttemptFollows: true,
        providerError: null,
        verification: { answer: FOUND },
      },
    ],
    [
      'a deferred unknown: dispatched under the key, the claimer follows at once under the bound provider’s window',
      deferredUnknownFacts({
        policy: 'assume-failed',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 30 * HOUR,
        sendTimeoutMs: 8_000,
      }),
      {
        dispatched: true,
        policy: 'assume-failed',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 30 * HOUR,
        delayBeforeRetryMs: 0,
        sendTimeoutMs: 8_000,
        anotherAttemptFollows: true,
        providerError: null,
      },
    ],
    [
      'an orphan the sweep settles unasked: no attempt follows, no retry under the key',
      sweptOrphanFacts({ dispatched: true, policy: 'assume-sent' }),
      {
        dispatched: true,
        policy: 'assume-sent',
        ...NO_RETRY_UNDER_KEY,
        anotherAttemptFollows: false,
        providerError: null,
      },
    ],
    [
      'an orphan the sweep asked about: with the answer',
      sweptOrphanFacts({ dispatched: true, policy: 'assume-failed', answer: NOT_FOUND }),
      {
        dispatched: true,
        policy: 'assume-failed',
        ...NO_RETRY_UNDER_KEY,
        anotherAttemptFollows: false,
        providerError: null,
        verification: { answer: NOT_FOUND },
      },
    ],
  ])('%s', (_situation, built, expected) => {
    expect(built).toEqual(expected);
  });
});

describe('what each situation then decides', () => {
  it.each<[string, UnknownOutcomeFacts, string]>([
    ['own attempt, nothing to ask: the policy', own(), 'policy'],
    [
      'own attempt that never passed the fence: not sent',
      own({ attempt: { dispatched: false, sinceKeyFirstDispatchMs: null } }),
      'not-sent',
    ],
    [
      'own attempt inside the key’s window, an attempt to follow: retried under the key',
      own({
        settings: {
          unknownOutcomePolicy: 'assume-sent',
          idempotency: RESEND,
          sendTimeoutMs: 8_000,
          verification: null,
        },
      }),
      'retry-under-key',
    ],
    [
      'own attempt where the provider can be asked: verify first',
      own({
        settings: {
          unknownOutcomePolicy: 'assume-sent',
          idempotency: null,
          sendTimeoutMs: 8_000,
          verification: VERIFY,
        },
      }),
      'verify',
    ],
    [
      'orphan at the claim, inside its provider’s window: retried under the key, even where it could ask',
      orphanFactsAtClaim({
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: HOUR,
        sendTimeoutMs: 8_000,
        canVerify: true,
      }),
      'retry-under-key',
    ],
    [
      'orphan at the claim, past the window, that can be asked: handed back to verify',
      orphanFactsAtClaim({
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 30 * HOUR,
        sendTimeoutMs: 8_000,
        canVerify: true,
      }),
      'verify',
    ],
    [
      'orphan at the claim that cannot be asked: the policy',
      orphanFactsAtClaim({
        policy: 'assume-failed',
        idempotency: null,
        sinceKeyFirstDispatchMs: HOUR,
        sendTimeoutMs: 8_000,
        canVerify: false,
      }),
      'policy',
    ],
    [
      'orphan asked, found',
      verifiedOrphanFacts({ policy: 'assume-failed', answer: FOUND }),
      'verified-accepted',
    ],
    [
      'orphan asked, not found',
      verifiedOrphanFacts({ policy: 'assume-sent', answer: NOT_FOUND }),
      'verified-not-sent',
    ],
    [
      'orphan asked in vain: the policy',
      verifiedOrphanFacts({ policy: 'assume-sent', answer: INCONCLUSIVE }),
      'policy',
    ],
    [
      'deferred unknown, the window still covering a retry: under the key',
      deferredUnknownFacts({
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: HOUR,
        sendTimeoutMs: 8_000,
      }),
      'retry-under-key',
    ],
    [
      'deferred unknown past the window: the policy',
      deferredUnknownFacts({
        policy: 'assume-sent',
        idempotency: RESEND,
        sinceKeyFirstDispatchMs: 23 * HOUR,
        sendTimeoutMs: 8_000,
      }),
      'policy',
    ],
    [
      'swept orphan never dispatched: not sent',
      sweptOrphanFacts({ dispatched: false, policy: 'assume-sent' }),
      'not-sent',
    ],
    [
      'swept orphan dispatched, unasked: the policy',
      sweptOrphanFacts({ dispatched: true, policy: 'assume-sent' }),
      'policy',
    ],
    [
      'swept orphan asked, found',
      sweptOrphanFacts({ dispatched: true, policy: 'assume-failed', answer: FOUND }),
      'verified-accepted',
    ],
  ])('%s', (_situation, facts, kind) => {
    expect(decideUnknownOutcome(facts).kind).toBe(kind);
  });
});
