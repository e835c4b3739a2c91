// --hold-at / --hold-for: a hold mid-run, its options and refusals, and the invariant that judges it: no send
// request at the provider from hold's return to resume.
import { describe, expect, it } from 'vitest';
import { parseRunOptions, UsageError } from '../../dev/demo/options';
import type { SendHoldFacts } from '../../dev/demo/report/facts';
import { sendHoldInvariants } from '../../dev/demo/report/scenarioInvariants';
import type { RunOptions } from '../../dev/demo/runOptions';

const parse = (...argv: string[]) => parseRunOptions(['--profile', 'chaos', ...argv]) as RunOptions;

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

describe('--hold-at', () => {
  it('holds at its moment for --hold-for (two minutes unless given); no hold without it', () => {
    expect(parse().sendHold).toBeNull();
    expect(parse('--hold-at', '40').sendHold).toEqual({ atMs: 40_000, forMs: 120_000 });
    expect(parse('--hold-for', '20', '--hold-at', '8').sendHold).toEqual({ atMs: 8_000, forMs: 20_000 });
  });

  it('refuses --hold-for alone, SMTP and --failover', () => {
    expect(() => parse('--hold-for', '20')).toThrow(UsageError);
    expect(() => parse('--hold-at', '8', '--transport', 'smtp')).toThrow(UsageError);
    expect(() => parse('--hold-at', '8', '--failover')).toThrow(UsageError);
  });
});

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
