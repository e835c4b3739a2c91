// The invariant that judges a hold mid-run (--hold-at): no send request at the provider from hold's return to resume.
import { describe, expect, it } from 'vitest';
import type { SendHoldFacts } from '../../dev/demo/report/facts';
import { sendHoldInvariants } from '../../dev/demo/report/scenarioInvariants';

const HELD: SendHoldFacts = {
  holdAskedAtMs: 40_000,
  heldAtMs: 41_000,
  holdWaitedMs: 1_000,
  inFlightAtHold: [],
  resumeAskedAtMs: 161_000,
  resumedAtMs: 163_000,
  requestsDuringHold: 0,
  requestsOfListedInFlight: 0,
  lookupsDuringHold: 12,
  heldOrdersAtResume: 180,
  signalled: 180,
  failure: null,
};

describe('no-request-while-held', () => {
  it('holds with no request while held, lookups or not', () => {
    expect(sendHoldInvariants(HELD)).toMatchObject([{ name: 'no-request-while-held', holds: true }]);
  });

  it('fails on one request while held, or on a hold or resume that was not made', () => {
    expect(sendHoldInvariants({ ...HELD, requestsDuringHold: 1 })).toMatchObject([
      { holds: false, violations: ['1 request(s) reached the provider while held'] },
    ]);
    expect(sendHoldInvariants({ ...HELD, failure: 'Postgres down' })).toMatchObject([{ holds: false }]);
  });
});
