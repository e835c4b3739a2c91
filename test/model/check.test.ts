// The bounded model checker in the suite: the real decideClaim and transition table, every interleaving of
// the model's actors within its bounds (test/model/model.ts). `npx tsx test/model/check.ts` runs it alone.
import { describe, expect, it } from 'vitest';
import { explore, CASE_STUDY_CLAIMED, printCounterexample, providerNamed, type Result } from './explore';
import { DEFAULT_BOUNDS } from './model';

function report(r: Result): void {
  console.log(
    `model ${r.config.provider}/${r.config.policy} ${JSON.stringify(r.config.mutations)} bounds ` +
      `${JSON.stringify(DEFAULT_BOUNDS)}: ${r.states} states in ${r.ms} ms`,
  );
  for (const c of [r.safety, ...r.liveness]) if (c !== null) console.log(printCounterexample(c));
}

const ownSideLiveness = (r: Result) =>
  r.liveness.filter((c) => !c.trace.some((m) => m.startsWith(CASE_STUDY_CLAIMED)));

describe('the row model, checked exhaustively', () => {
  // Generic, Postmark and Mailgun share the model's lookup profile: what each lookup sees is the evidence
  // rules' (test/evidence); the model checks what the row does with the verdict.
  it('a lookup provider under assume-sent: never two mails; every order ends with one once faults stop', () => {
    const r = explore({ provider: providerNamed('generic'), policy: 'assume-sent' });
    report(r);
    expect(r.safety).toBeNull();
    expect(ownSideLiveness(r)).toEqual([]);
    // The orders left without a mail: the case study's writer claimed, and stopped or answered after the sweep
    // settled its quiet row by the policy (its request has no key of ours to look up; docs/design.md §9).
    expect(r.liveness.map((c) => c.why)).toEqual(['the order ended with 0 mails']);
    expect(r.transitions).toEqual([
      'caseStudyClaim',
      'caseStudyLateRecord',
      'caseStudyReclaim',
      'caseStudyRecord',
      'firstClaim',
      'markDispatched',
      'reclaimFailed',
      'record',
      'releaseUndispatchedOrphan',
      'reopenAfterSecondLook',
      'secondLookFound',
      'settleDispatchedOrphan',
      'takeOverUndispatched',
    ]);
  });

  it('Resend: a retry under the key is settled by the claim once its window closed', () => {
    const r = explore({ provider: providerNamed('resend'), policy: 'assume-failed' });
    expect(r.transitions).toContain('settleDeferredUnknown');
  });

  it('Resend under assume-sent: never two mails, a takeover after the window included', () => {
    const r = explore({ provider: providerNamed('resend'), policy: 'assume-sent' });
    report(r);
    // Once printed: a Reset, the closed run's late reclaim, and the takeover sent under the expired key.
    expect(r.safety).toBeNull();
    expect(r.transitions).toEqual(expect.arrayContaining(['settleDeferredUnknown', 'takeOverUndispatched']));
    // The policy's price without a lookup: a request dropped before Resend, settled as sent (docs/design.md §9).
    const own = ownSideLiveness(r);
    expect(own.map((c) => c.why)).toEqual(['the order ended with 0 mails']);
    expect(own[0]?.trace).toContain('r1: request: dropped-before-provider');
  });

  it("(a) with the trigger's old session-setting rule it prints a counterexample", () => {
    const r = explore({
      provider: providerNamed('generic'),
      policy: 'assume-sent',
      mutations: { sessionSettingTrigger: true },
    });
    report(r);
    expect(r.safety?.why).toMatch(/caseStudyReclaim moved a row this service held/);
  });

  it('(b) with "not found" counted without a witness it prints a counterexample', () => {
    const r = explore({
      provider: providerNamed('postmark'),
      policy: 'assume-sent',
      mutations: { notFoundWithoutWitness: true },
    });
    report(r);
    expect(r.safety?.why).toBe('two mails accepted for one order');
  });

  it('(c) with an outage under assume-sent and no second look it prints a counterexample', () => {
    const r = explore({
      provider: providerNamed('mailgun'),
      policy: 'assume-sent',
      mutations: { noSecondLook: true },
    });
    report(r);
    expect(r.safety).toBeNull();
    const own = ownSideLiveness(r);
    expect(own.map((c) => c.why)).toEqual(['the order ended with 0 mails']);
    expect(own[0]?.trace).toContain('r1: request: dropped-before-provider');
  });
});
