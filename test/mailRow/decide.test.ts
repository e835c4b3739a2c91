// decideClaim over every kind of its inputs: each row kind × each provider choice × each deferred unknown ×
// each clock fact × each verdict. Pure: no database; the claim's SQL is tested in test/db and test/property.
import { describe, expect, it } from 'vitest';
import type { ClaimRequest } from '../../src/mailRow/decide';
import {
  afterTransition,
  decideClaim,
  decideVerdict,
  type ClaimFacts,
  type ClaimRow,
  type ClaimStep,
} from '../../src/mailRow/decide';
import type { NoProviderChoice, ProviderChoice } from '../../src/shared/providerChoice';
import type { UnknownOutcomePolicy } from '../../src/shared/mailOutcome';
import {
  decideUnknownOutcome,
  describeUnknownDecision,
  type VerificationAnswer,
} from '../../src/shared/unknownOutcome';
import { verifiedOrphanFacts } from '../../src/shared/unknownOutcomeFacts';

const T = (s: number): Date => new Date(Date.UTC(2026, 11, 6, 10, 0, s));
const SCOPE = 'default/order-mail-1/';
const OWN = `${SCOPE}run-2`;
const CLOSED = `${SCOPE}run-1`;
const WINDOW = { windowMs: 60_000, safetyMarginMs: 5_000 };

function request(over: Partial<ClaimRequest> = {}): ClaimRequest {
  return {
    orderId: '1',
    claimToken: OWN,
    workflowScope: SCOPE,
    issuedAt: T(30),
    policy: 'assume-failed',
    idempotency: null,
    sendTimeoutMs: 10_000,
    recordedBy: 'test',
    ...over,
  };
}

function row(over: Partial<ClaimRow> = {}): ClaimRow {
  return {
    orderId: '1',
    state: 'sending',
    attempts: 1,
    claimToken: CLOSED,
    claimIssuedAt: T(10),
    claimedAt: T(10),
    resendCount: 0,
    dispatchedAt: null,
    outcome: null,
    provider: 'postmark',
    providerChoice: 'first',
    ...over,
  };
}

const CHOSEN: ProviderChoice = { provider: 'postmark', reason: 'first', explanation: 'the first' };
const BOUND_UNCONFIGURED: NoProviderChoice = {
  provider: 'mailgun',
  reason: 'bound-unconfigured',
  explanation: 'bound to mailgun',
};
const ALL_DRAINING: NoProviderChoice = {
  provider: 'postmark',
  reason: 'all-draining',
  explanation: 'all drain',
};

/** Answers every fact decide asks for from `facts`, as the claim loop does; returns the final step. */
function settle(r: ClaimRow | null | 'unread', req: ClaimRequest, facts: ClaimFacts): ClaimStep {
  // The verdict is given, never asked for: the claimer brings it back after asking the provider.
  const known: ClaimFacts = facts.verdict === undefined ? {} : { verdict: facts.verdict };
  for (let asked = 0; asked < 6; asked++) {
    const step = decideClaim(r, req, known);
    if (step.kind !== 'need') return step;
    const key = {
      'provider-choice': 'providerChoice',
      'unknown-under-key': 'unknownUnderKey',
      'since-key-first-dispatch': 'sinceKeyFirstDispatchMs',
      'since-attempt-dispatch': 'sinceAttemptDispatchMs',
    }[step.fact] as keyof ClaimFacts;
    expect(key in known, `asked twice for ${step.fact}`).toBe(false);
    expect(key in facts, `asked for ${step.fact}, which this case does not give`).toBe(true);
    Object.assign(known, { [key]: facts[key] });
  }
  throw new Error('decide kept asking');
}

function kindOf(step: ClaimStep): string {
  if (step.kind === 'run') {
    const t = step.transition;
    if (t.name === 'settleDispatchedOrphan' || t.name === 'settleDeferredUnknown') {
      return `${t.name}:${t.decision.kind}:${t.decision.state}`;
    }
    return t.name;
  }
  if (step.kind === 'answer') return step.answer.kind;
  return step.kind;
}

describe('decideClaim', () => {
  it('an order without a row (unread or read as none): first claim, or no provider', () => {
    for (const r of ['unread', null] as const) {
      expect(decideClaim(r, request(), {})).toEqual({
        kind: 'need',
        fact: 'provider-choice',
        readEarlier: false,
        leftBehind: null,
      });
      expect(kindOf(settle(r, request(), { providerChoice: CHOSEN }))).toBe('firstClaim');
      expect(kindOf(settle(r, request(), { providerChoice: BOUND_UNCONFIGURED }))).toBe('no-provider');
      expect(kindOf(settle(r, request(), { providerChoice: ALL_DRAINING }))).toBe('no-provider');
    }
  });

  it('rows it only answers about, whatever the facts: own claim, sent, held elsewhere, not later', () => {
    const cases: [ClaimRow, string, boolean?][] = [
      [row({ claimToken: OWN, claimIssuedAt: T(40) }), 'claimed'],
      [row({ claimToken: OWN, dispatchedAt: T(41) }), 'claimed'],
      [row({ state: 'sent', outcome: 'accepted' }), 'already-sent'],
      [row({ state: 'sent', outcome: 'unknown', claimToken: OWN }), 'already-sent'],
      [row({ claimToken: 'default/order-mail-2/run-1' }), 'held-elsewhere', false],
      [row({ claimToken: 'legacy:abc' }), 'held-elsewhere', false],
      [row({ claimIssuedAt: T(30) }), 'held-elsewhere', true],
      [row({ claimIssuedAt: T(50), dispatchedAt: T(51) }), 'held-elsewhere', true],
      [row({ state: 'failed', outcome: 'not_sent', claimIssuedAt: T(30) }), 'held-elsewhere', true],
    ];
    for (const [r, kind, sameWorkflow] of cases) {
      const step = decideClaim(r, request(), {});
      expect(kindOf(step), JSON.stringify(r)).toBe(kind);
      if (step.kind === 'answer' && step.answer.kind === 'held-elsewhere') {
        expect(step.answer.sameWorkflow).toBe(sameWorkflow);
      }
    }
    const own = decideClaim(row({ claimToken: OWN, attempts: 3, resendCount: 1 }), request(), {});
    expect(own).toEqual({
      kind: 'answer',
      answer: {
        kind: 'claimed',
        attempt: 3,
        how: 'own-claim',
        resendCount: 1,
        provider: 'postmark',
        providerChoice: 'first',
      },
    });
  });

  it('a failed row: by choice × the key unknown × its window', () => {
    const failed = row({ state: 'failed', outcome: 'not_sent' });
    // The case study's failed row (issued at the epoch) is reclaimed like any earlier claim's.
    const legacy = row({
      state: 'failed',
      outcome: 'legacy',
      claimToken: 'legacy:x',
      claimIssuedAt: new Date(0),
    });
    expect(kindOf(settle(legacy, request(), { providerChoice: CHOSEN, unknownUnderKey: null }))).toBe(
      'reclaimFailed',
    );
    const unknowns = {
      none: null,
      assumed: { unknownPolicy: 'assume-failed', firstDispatchedAt: T(5) },
      deferred: { unknownPolicy: 'idempotent-retry', firstDispatchedAt: T(5) },
    } as const;
    const expected: Record<string, Record<string, string>> = {
      // [unknown][window] → step; the window only matters for a deferred unknown with a key window
      none: { inside: 'reclaimFailed', outside: 'reclaimFailed', noKey: 'reclaimFailed' },
      assumed: { inside: 'reclaimFailed', outside: 'reclaimFailed', noKey: 'reclaimFailed' },
      deferred: {
        inside: 'reclaimFailed',
        outside: 'settleDeferredUnknown:policy:failed',
        noKey: 'settleDeferredUnknown:policy:failed',
      },
    };
    const windows = {
      inside: { idempotency: WINDOW, since: 1_000 },
      outside: { idempotency: WINDOW, since: 50_000 },
      noKey: { idempotency: null, since: 1_000 },
    };
    for (const [u, unknownUnderKey] of Object.entries(unknowns)) {
      for (const [w, { idempotency, since }] of Object.entries(windows)) {
        const req = request({ idempotency });
        const facts = { providerChoice: CHOSEN, unknownUnderKey, sinceKeyFirstDispatchMs: since };
        expect(kindOf(settle(failed, req, facts)), `${u}/${w}`).toBe(expected[u]?.[w]);
        for (const none of [BOUND_UNCONFIGURED, ALL_DRAINING]) {
          expect(kindOf(settle(failed, req, { ...facts, providerChoice: none }))).toBe('no-provider');
        }
      }
    }
    // Under assume-sent the window's end settles the deferred unknown as sent.
    const sent = settle(failed, request({ policy: 'assume-sent', idempotency: WINDOW }), {
      providerChoice: CHOSEN,
      unknownUnderKey: unknowns.deferred,
      sinceKeyFirstDispatchMs: 50_000,
    });
    expect(kindOf(sent)).toBe('settleDeferredUnknown:policy:sent');
    if (sent.kind === 'run' && sent.transition.name === 'settleDeferredUnknown') {
      expect(sent.transition.dispatchedAt).toEqual(T(5));
    }
  });

  it("a closed run's undispatched attempt: taken over, its attempt left behind as not sent", () => {
    const r = row();
    expect(decideClaim(r, request(), {})).toEqual({
      kind: 'need',
      fact: 'provider-choice',
      readEarlier: true,
      leftBehind: { attempt: 1, provider: 'postmark', outcome: 'not_sent' },
    });
    expect(kindOf(settle(r, request(), { providerChoice: CHOSEN, unknownUnderKey: null }))).toBe(
      'takeOverUndispatched',
    );
    expect(kindOf(settle(r, request(), { providerChoice: BOUND_UNCONFIGURED }))).toBe('no-provider');
  });

  it("a closed run's undispatched attempt under a key whose window closed: settled by the policy, not taken over", () => {
    // The model checker's trace: a retry under the key claimed by a run that closed before dispatching, taken
    // over by a later run more than the key's window after its first request.
    const r = row({ attempts: 2 });
    const unknowns = {
      none: null,
      assumed: { unknownPolicy: 'assume-failed', firstDispatchedAt: T(5) },
      deferred: { unknownPolicy: 'idempotent-retry', firstDispatchedAt: T(5) },
    } as const;
    const expected: Record<string, Record<string, string>> = {
      none: {
        inside: 'takeOverUndispatched',
        outside: 'takeOverUndispatched',
        noKey: 'takeOverUndispatched',
      },
      assumed: {
        inside: 'takeOverUndispatched',
        outside: 'takeOverUndispatched',
        noKey: 'takeOverUndispatched',
      },
      deferred: {
        inside: 'takeOverUndispatched',
        outside: 'settleDeferredUnknown:policy:failed',
        noKey: 'settleDeferredUnknown:policy:failed',
      },
    };
    const windows = {
      inside: { idempotency: WINDOW, since: 1_000 },
      outside: { idempotency: WINDOW, since: 50_000 },
      noKey: { idempotency: null, since: 1_000 },
    };
    for (const [u, unknownUnderKey] of Object.entries(unknowns)) {
      for (const [w, { idempotency, since }] of Object.entries(windows)) {
        const facts = { providerChoice: CHOSEN, unknownUnderKey, sinceKeyFirstDispatchMs: since };
        expect(kindOf(settle(r, request({ idempotency }), facts)), `${u}/${w}`).toBe(expected[u]?.[w]);
        expect(
          kindOf(settle(r, request({ idempotency }), { ...facts, providerChoice: BOUND_UNCONFIGURED })),
        ).toBe('no-provider');
      }
    }
    const sent = settle(r, request({ policy: 'assume-sent', idempotency: WINDOW }), {
      providerChoice: CHOSEN,
      unknownUnderKey: unknowns.deferred,
      sinceKeyFirstDispatchMs: 50_000,
    });
    expect(kindOf(sent)).toBe('settleDeferredUnknown:policy:sent');
    if (sent.kind !== 'run' || sent.transition.name !== 'settleDeferredUnknown')
      throw new Error('not settled');
    expect(sent.transition.dispatchedAt).toEqual(T(5));
    // The orphan gets its audit row with the settlement; a failed row has none to write.
    expect(sent.transition.orphanNote).toMatch(/closed before dispatching/);
    const failed = settle(row({ state: 'failed', outcome: 'not_sent' }), request({ idempotency: WINDOW }), {
      providerChoice: CHOSEN,
      unknownUnderKey: unknowns.deferred,
      sinceKeyFirstDispatchMs: 50_000,
    });
    expect(failed).toMatchObject({ kind: 'run', transition: { orphanNote: null } });
  });

  it('a dispatched orphan: policy × key window × verification × the dispatch still there', () => {
    const r = row({ dispatchedAt: T(12) });
    const cases: [Partial<ClaimRequest>, ClaimFacts, string][] = [
      [{}, { sinceKeyFirstDispatchMs: 1_000 }, 'settleDispatchedOrphan:policy:failed'],
      [{ policy: 'assume-sent' }, { sinceKeyFirstDispatchMs: 1_000 }, 'settleDispatchedOrphan:policy:sent'],
      [
        { idempotency: WINDOW },
        { sinceKeyFirstDispatchMs: 1_000 },
        'settleDispatchedOrphan:retry-under-key:failed',
      ],
      [{ idempotency: WINDOW }, { sinceKeyFirstDispatchMs: 50_000 }, 'settleDispatchedOrphan:policy:failed'],
      [{ idempotency: WINDOW }, { sinceKeyFirstDispatchMs: null }, 'settleDispatchedOrphan:policy:failed'],
      [
        { verifyDispatchedOrphans: true },
        { sinceKeyFirstDispatchMs: 1_000, sinceAttemptDispatchMs: 4_000 },
        'verify-orphan',
      ],
      [
        { verifyDispatchedOrphans: true },
        { sinceKeyFirstDispatchMs: 1_000, sinceAttemptDispatchMs: null },
        'read-again',
      ],
      // A retry under the key needs no asking, even where the provider could be asked.
      [
        { verifyDispatchedOrphans: true, idempotency: WINDOW },
        { sinceKeyFirstDispatchMs: 1_000 },
        'settleDispatchedOrphan:retry-under-key:failed',
      ],
    ];
    for (const [req, facts, kind] of cases) {
      const step = settle(r, request(req), { providerChoice: CHOSEN, ...facts });
      expect(kindOf(step), JSON.stringify([req, facts])).toBe(kind);
      expect(kindOf(settle(r, request(req), { ...facts, providerChoice: BOUND_UNCONFIGURED }))).toBe(
        'no-provider',
      );
    }
    const handed = settle(r, request({ verifyDispatchedOrphans: true }), {
      providerChoice: CHOSEN,
      sinceKeyFirstDispatchMs: 1_000,
      sinceAttemptDispatchMs: 4_000,
    });
    expect(handed).toEqual({
      kind: 'answer',
      answer: {
        kind: 'verify-orphan',
        attempt: 1,
        holder: CLOSED,
        resendCount: 0,
        sinceDispatchMs: 4_000,
        provider: 'postmark',
      },
    });
  });

  it("the judgement is the provider's the attempt went to, not the claimer's default", () => {
    const r = row({ dispatchedAt: T(12), provider: 'mailgun' });
    const byProvider = new Map([['mailgun', { idempotency: WINDOW, canVerify: false }]]);
    const step = settle(r, request({ byProvider }), {
      providerChoice: CHOSEN,
      sinceKeyFirstDispatchMs: 1_000,
    });
    expect(kindOf(step)).toBe('settleDispatchedOrphan:retry-under-key:failed');
    const other = row({ dispatchedAt: T(12), provider: 'postmark' });
    expect(
      kindOf(settle(other, request({ byProvider }), { providerChoice: CHOSEN, sinceKeyFirstDispatchMs: 1 })),
    ).toBe('settleDispatchedOrphan:policy:failed');
  });

  it("the provider's verdict on the held attempt settles it, and only that attempt", () => {
    const r = row({ dispatchedAt: T(12), attempts: 2 });
    const verdicts: [VerificationAnswer, string][] = [
      [
        { kind: 'found', via: 'lookup', providerMessageId: 'm-1' },
        'settleDispatchedOrphan:verified-accepted:sent',
      ],
      [
        { kind: 'found', via: 'webhook', providerMessageId: null },
        'settleDispatchedOrphan:verified-accepted:sent',
      ],
      [
        { kind: 'not-found', via: 'lookup', sinceDispatchMs: 60_000 },
        'settleDispatchedOrphan:verified-not-sent:failed',
      ],
      [{ kind: 'inconclusive', reason: 'no access' }, 'settleDispatchedOrphan:policy:failed'],
    ];
    for (const [answer, kind] of verdicts) {
      const facts = { verdict: { holder: CLOSED, attempt: 2, answer } };
      expect(kindOf(settle(r, request(), facts))).toBe(kind);
      expect(kindOf(settle(r, request(), { verdict: { holder: CLOSED, attempt: 1, answer } }))).toBe(
        'read-again',
      );
      expect(kindOf(settle(r, request(), { verdict: { holder: 'x', attempt: 2, answer } }))).toBe(
        'read-again',
      );
    }
    const inconclusiveSent = settle(r, request({ policy: 'assume-sent' }), {
      verdict: { holder: CLOSED, attempt: 2, answer: { kind: 'inconclusive', reason: 'lookup down' } },
    });
    expect(kindOf(inconclusiveSent)).toBe('settleDispatchedOrphan:policy:sent');
  });

  it('every transition is followed by the claim it made, or by reading again', () => {
    const claimed = { provider: 'postmark', providerChoice: 'first', providerExplanation: 'the first' };
    expect(afterTransition({ name: 'firstClaim', claimed }, { applied: true, attempt: 1 }, 'unread')).toEqual(
      {
        kind: 'claimed',
        attempt: 1,
        how: 'first-claim',
        resendCount: 0,
        ...claimed,
      },
    );
    const r = row({ state: 'failed', resendCount: 2 });
    expect(
      afterTransition({ name: 'reclaimFailed', claimed }, { applied: true, attempt: 4 }, r),
    ).toMatchObject({
      how: 'reclaimed-failed',
      attempt: 4,
      resendCount: 2,
    });
    expect(
      afterTransition({ name: 'takeOverUndispatched', claimed, note: '' }, { applied: true, attempt: 2 }, r),
    ).toMatchObject({ how: 'took-over-undispatched', attempt: 2 });
    const decision = {
      kind: 'not-sent',
      state: 'failed',
      outcome: 'not_sent',
      unknownPolicy: null,
    } as const;
    for (const t of [
      { name: 'settleDispatchedOrphan', decision, note: '' },
      { name: 'settleDeferredUnknown', decision, note: '', dispatchedAt: T(1), orphanNote: null },
      { name: 'reclaimFailed', claimed },
    ] as const) {
      expect(afterTransition(t, { applied: false }, r)).toBe('read-again');
    }
    expect(
      afterTransition(
        { name: 'settleDispatchedOrphan', decision, note: '' },
        { applied: true, attempt: 1 },
        r,
      ),
    ).toBe('read-again');
  });
});

describe("decideVerdict: the verify activity settles by the claim's rule", () => {
  /**
   * The rule settleVerifiedOrphan applied on its own before it went through decideClaim, with its statement's
   * fence (issued later): the shared rule must settle exactly where it did, the same way.
   */
  function formerRule(r: ClaimRow | null, policy: UnknownOutcomePolicy, answer: VerificationAnswer) {
    if (
      r === null ||
      r.state !== 'sending' ||
      r.claimToken === OWN ||
      r.claimToken !== CLOSED ||
      !r.claimToken.startsWith(SCOPE) ||
      r.attempts !== 1 ||
      r.dispatchedAt === null ||
      !(r.claimIssuedAt < T(30))
    ) {
      return null;
    }
    const facts = verifiedOrphanFacts({ policy, answer });
    const decision = decideUnknownOutcome(facts);
    const note = `the run holding this claim closed after dispatching; ${describeUnknownDecision(decision, facts)}`;
    return { name: 'settleDispatchedOrphan', decision, note };
  }

  it('settles exactly the rows the former rule settled, with the same decision and note', () => {
    const answers: VerificationAnswer[] = [
      { kind: 'found', via: 'lookup', providerMessageId: 'm-1' },
      { kind: 'found', via: 'webhook', providerMessageId: null },
      { kind: 'not-found', via: 'lookup', sinceDispatchMs: 600_000 },
      { kind: 'inconclusive', reason: 'no answer' },
    ];
    const tokens = [CLOSED, OWN, `${SCOPE}run-0`, 'default/order-mail-2/run-1', 'legacy:x', 'operator:x'];
    const rows: (ClaimRow | null)[] = [null];
    for (const state of ['sending', 'sent', 'failed'] as const)
      for (const claimToken of tokens)
        for (const attempts of [1, 2])
          for (const dispatchedAt of [null, T(12)])
            for (const claimIssuedAt of [T(10), T(30), T(40)]) {
              const outcome = state === 'sending' ? null : state === 'sent' ? 'accepted' : 'not_sent';
              rows.push(row({ state, claimToken, attempts, dispatchedAt, claimIssuedAt, outcome }));
            }
    let settled = 0;
    for (const r of rows)
      for (const policy of ['assume-failed', 'assume-sent'] as const)
        for (const answer of answers) {
          const shared = decideVerdict(r, request({ policy }), { holder: CLOSED, attempt: 1, answer });
          expect({ r, policy, answer, shared }).toEqual({
            r,
            policy,
            answer,
            shared: formerRule(r, policy, answer),
          });
          if (shared !== null) settled++;
        }
    // Each policy × answer settles the one row the rule names (sending, the holder's, dispatched, earlier).
    expect(settled).toBe(2 * answers.length);
  });

  it('found settles as sent, not found as failed, inconclusive by the policy', () => {
    const closed = row({ dispatchedAt: T(12) });
    const verdict = (answer: VerificationAnswer) => ({ holder: CLOSED, attempt: 1, answer });
    const kinds = (policy: UnknownOutcomePolicy) =>
      [
        { kind: 'found', via: 'lookup', providerMessageId: 'm-1' },
        { kind: 'not-found', via: 'lookup', sinceDispatchMs: 600_000 },
        { kind: 'inconclusive', reason: 'no answer' },
      ].map((answer) => {
        const settle = decideVerdict(closed, request({ policy }), verdict(answer as VerificationAnswer));
        return settle && [settle.decision.kind, settle.decision.state];
      });
    expect(kinds('assume-failed')).toEqual([
      ['verified-accepted', 'sent'],
      ['verified-not-sent', 'failed'],
      ['policy', 'failed'],
    ]);
    expect(kinds('assume-sent')).toEqual([
      ['verified-accepted', 'sent'],
      ['verified-not-sent', 'failed'],
      ['policy', 'sent'],
    ]);
  });
});
